// SPDX-License-Identifier: LGPL-2.1-or-later
/* The logind bridge (see logind.h). */
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "holds.h"
#include "log.h"
#include "logind-internal.h"
#include "logind.h"
#include "loop.h"
#include "policy.h"
#include "util.h"

#define LOGIND_NAME "org.freedesktop.login1"
#define LOGIND_PATH "/org/freedesktop/login1"
#define LOGIND_MANAGER "org.freedesktop.login1.Manager"
/* The bus driver: the only sender of a true NameOwnerChanged. */
#define DRIVER_NAME "org.freedesktop.DBus"
#define RETRY_INITIAL_USEC (1 * USEC_PER_SEC)
#define RETRY_MAX_USEC (60 * USEC_PER_SEC)

static void holds_changed(struct qj_logind *b)
{
	qj_loop_post(b->h.loop, b->h.holds_changed);
}

/* EPOLLOUT while sd-bus has something to write (EPOLLIN always: it reads whenever it may). */
static void update_events(struct qj_logind *b)
{
	int e;

	if (!b->bus)
		return;
	e = sd_bus_get_events(b->bus);
	if (e < 0)
		return;
	(void)qj_loop_mod(b->h.loop, &b->source, b->fd, e & POLLOUT ? EPOLLOUT : 0);
}

/*
 * Whether @m really comes from @want (the bus driver, or logind's unique name).  Any local
 * user may send our connection a unicast signal (Debian's system-bus policy allows
 * signals to anyone) and a match rule's sender is not a check: the sender field, which the
 * bus daemon fills in itself, is.  Refusals are logged at notice the 1st, 2nd, 4th, 8th...
 * time, so a flood of forgeries costs log lines only logarithmically.
 */
static bool sent_by(struct qj_logind *b, sd_bus_message *m, const char *want)
{
	const char *sender = sd_bus_message_get_sender(m);

	if (sender && want && want[0] && strcmp(sender, want) == 0)
		return true;
	b->n_forged++;
	if ((b->n_forged & (b->n_forged - 1)) == 0)
		log_notice("logind: ignoring %s from %s, which is not %s (%" PRIu64
			   " such signal(s) so far)",
			   sd_bus_message_get_member(m), sender ? sender : "(no sender)",
			   want && want[0] ? want : "logind's known unique name", b->n_forged);
	else
		log_debug("logind: ignoring %s from %s", sd_bus_message_get_member(m),
			  sender ? sender : "(no sender)");
	return false;
}

static void set_owner(struct qj_logind *b, const char *owner)
{
	char *o = strdup(owner ? owner : "");

	if (!o)
		return; /* keep the old one: at worst a change is missed until the next */
	free(b->owner);
	b->owner = o;
}

/* The list is known again (true), or not (with @why, for the fail-closed hold). */
static void set_unknown(struct qj_logind *b, bool unknown, const char *why)
{
	b->list_unknown = unknown;
	if (unknown)
		snprintf(b->unknown_why, sizeof(b->unknown_why), "%s", why);
}

void qj_logind_recheck(struct qj_logind *b, bool force)
{
	if (!b || (!force && b->app_gen == *b->h.app_gen))
		return;
	b->app_gen = *b->h.app_gen;
	if (qj_lgi_apply_all(b))
		holds_changed(b);
}

/* Whether @what (colon-separated, as logind lists it) names "sleep". */
static bool what_has_sleep(const char *what)
{
	for (const char *p = what; *p;) {
		size_t len = strcspn(p, ":");

		if (len == 5 && strncmp(p, "sleep", 5) == 0)
			return true;
		p += len + (p[len] == ':');
	}
	return false;
}

static int request_list(struct qj_logind *b);

static bool away(const struct qj_logind *b)
{
	return b->away_until_usec != USEC_INFINITY;
}

/*
 * logind left the bus.  Real logind keeps its inhibitors across a restart (it reloads
 * them), so "not on the bus" is not "no inhibitors": the inhibitor holds stay, and the
 * hold "logind" covers what may change meanwhile, until logind is back and listed again,
 * for at most logind.absent_max (a logind that never returns must not keep the system
 * awake for ever; 0 drops everything at once).
 */
static void logind_left(struct qj_logind *b)
{
	uint64_t max = (*b->h.policy)->logind_absent_max_usec, t = now_usec(CLOCK_MONOTONIC);
	size_t n = 0;

	b->logind_present = false;
	set_owner(b, "");
	if (away(b))
		return;
	for (size_t k = 0; k < b->n; k++)
		n += b->v[k].conn != 0;
	if (max == 0) {
		n = qj_lgi_drop_all(b);
		log_info("logind: left the system bus, its %zu inhibitor hold(s) dropped "
			 "(logind.absent_max is 0)",
			 n);
		if (n > 0)
			holds_changed(b);
		return;
	}
	b->away_since_usec = t;
	b->away_until_usec = t + max;
	log_notice("logind: left the system bus; its %zu inhibitor hold(s) stay and the hold "
		   "'logind' keeps the system awake until it is back, for at most %" PRIu64
		   " s (logind.absent_max)",
		   n, (uint64_t)(max / USEC_PER_SEC));
	if (qj_lgi_update_failclosed(b))
		holds_changed(b);
}

static void away_expired(struct qj_logind *b)
{
	uint64_t t = now_usec(CLOCK_MONOTONIC) - b->away_since_usec;
	size_t n = qj_lgi_drop_all(b);

	log_warning("logind: away from the system bus for %" PRIu64 " s (logind.absent_max): "
		    "%zu hold(s) for its inhibitors dropped; they are listed again when it is back",
		    (uint64_t)(t / USEC_PER_SEC), n);
	if (n > 0)
		holds_changed(b);
}

static void list_failed(struct qj_logind *b, int r, const char *what)
{
	char why[QJ_HOLD_REASON_MAX];

	/* The delay this retry waits, said as it is (it doubles from 1 s up to 1 min). */
	b->retry_usec = b->retry_usec ? b->retry_usec * 2 : RETRY_INITIAL_USEC;
	if (b->retry_usec > RETRY_MAX_USEC)
		b->retry_usec = RETRY_MAX_USEC;
	b->retry_at_usec = now_usec(CLOCK_MONOTONIC) + b->retry_usec;
	snprintf(why, sizeof(why), "ListInhibitors failed (%s): the inhibitors are unknown", what);
	log_warning("logind: %s; holding the system awake, retrying in %" PRIu64 " s", why,
		    (uint64_t)(b->retry_usec / USEC_PER_SEC));
	(void)r;
	set_unknown(b, true, why);
	(void)qj_lgi_update_failclosed(b);
	holds_changed(b);
}

static bool is_absent_error(const sd_bus_error *e)
{
	return sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN,
				      SD_BUS_ERROR_NAME_HAS_NO_OWNER);
}

static int on_list_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct qj_logind *b = userdata;
	const sd_bus_error *e = sd_bus_message_get_error(m);
	const char *what, *who, *why, *mode;
	uint32_t uid, pid;
	int r;

	b->list_slot = sd_bus_slot_unref(b->list_slot);
	if (e && is_absent_error(e) && (b->logind_present || away(b))) {
		logind_left(b); /* it left before its NameOwnerChanged reached us */
		return 0;
	}
	if (e && is_absent_error(e)) {
		/* No logind on this bus since we started: nobody holds an inhibitor. */
		if (b->list_unknown || b->n)
			log_info("logind: not on the system bus, no inhibitors to follow");
		set_owner(b, "");
		b->retry_usec = 0;
		b->retry_at_usec = USEC_INFINITY;
		if (qj_lgi_drop_all(b) > 0)
			holds_changed(b);
		return 0;
	}
	if (e) {
		list_failed(b, -sd_bus_error_get_errno(e), e->name);
		return 0;
	}
	/* The reply comes from logind's unique name: its signals must come from there too. */
	set_owner(b, sd_bus_message_get_sender(m));
	qj_lgi_unsee_all(b);
	r = sd_bus_message_enter_container(m, 'a', "(ssssuu)");
	while (r >= 0 &&
	       (r = sd_bus_message_read(m, "(ssssuu)", &what, &who, &why, &mode, &uid, &pid)) > 0) {
		if (!what_has_sleep(what) || strcmp(mode, "block") != 0)
			continue;
		r = qj_lgi_see(b, who, why, (uid_t)uid, (pid_t)pid);
		if (r < 0)
			break;
	}
	if (r >= 0)
		r = sd_bus_message_exit_container(m);
	if (r < 0) {
		/* Keep what was known, and hold: a half-read list is not "no inhibitors". */
		for (size_t k = 0; k < b->n; k++)
			b->v[k].seen = true;
		list_failed(b, r, strerror(-r));
		return 0;
	}
	qj_lgi_drop_unseen(b);
	b->logind_present = true;
	b->away_until_usec = USEC_INFINITY;
	b->retry_usec = 0;
	b->retry_at_usec = USEC_INFINITY;
	b->app_gen = *b->h.app_gen;
	set_unknown(b, false, NULL);
	(void)qj_lgi_apply_all(b);
	holds_changed(b);
	if (b->relist) {
		b->relist = false;
		(void)request_list(b);
	}
	return 0;
}

static int request_list(struct qj_logind *b)
{
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
	int r;

	if (b->list_slot) {
		b->relist = true;
		return 0;
	}
	r = sd_bus_message_new_method_call(b->bus, &m, LOGIND_NAME, LOGIND_PATH, LOGIND_MANAGER,
					   "ListInhibitors");
	if (r >= 0)
		r = sd_bus_message_set_auto_start(m, false);
	if (r >= 0)
		r = sd_bus_call_async(b->bus, &b->list_slot, m, on_list_reply, b, 0);
	if (r < 0) {
		list_failed(b, r, strerror(-r));
		return r;
	}
	update_events(b);
	return 0;
}

/* Whether a PropertiesChanged of the Manager names BlockInhibited. */
static bool names_block_inhibited(sd_bus_message *m)
{
	const char *iface, *key;
	bool found = false;

	if (sd_bus_message_read(m, "s", &iface) < 0 || strcmp(iface, LOGIND_MANAGER) != 0)
		return false;
	if (sd_bus_message_enter_container(m, 'a', "{sv}") < 0)
		return true; /* unreadable: re-listing costs little */
	while (sd_bus_message_enter_container(m, 'e', "sv") > 0) {
		if (sd_bus_message_read(m, "s", &key) < 0 || sd_bus_message_skip(m, "v") < 0)
			return true;
		found |= strcmp(key, "BlockInhibited") == 0;
		if (sd_bus_message_exit_container(m) < 0)
			return true;
	}
	if (sd_bus_message_exit_container(m) < 0 || sd_bus_message_enter_container(m, 'a', "s") < 0)
		return true;
	while (sd_bus_message_read(m, "s", &key) > 0)
		found |= strcmp(key, "BlockInhibited") == 0;
	return found;
}

static int on_properties_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct qj_logind *b = userdata;

	if (!b->owner || !b->owner[0]) {
		/* No list answered yet: the one in flight (or the retry) reads the truth. */
		log_debug(
			"logind: PropertiesChanged before logind's unique name is known, ignored");
		return 0;
	}
	if (!sent_by(b, m, b->owner))
		return 0;
	if (names_block_inhibited(m)) {
		log_debug("logind: BlockInhibited changed, listing the inhibitors");
		(void)request_list(b);
	}
	return 0;
}

static int on_name_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct qj_logind *b = userdata;
	const char *name, *old_owner, *new_owner;

	if (!sent_by(b, m, DRIVER_NAME))
		return 0;
	if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) < 0 ||
	    strcmp(name, LOGIND_NAME) != 0)
		return 0;
	set_owner(b, new_owner);
	if (new_owner[0] && away(b)) {
		/* Back: from here on its list decides, failing closed until it answers. */
		log_info("logind: back on the system bus after %" PRIu64 " ms, listing its "
			 "inhibitors",
			 (uint64_t)((now_usec(CLOCK_MONOTONIC) - b->away_since_usec) /
				    USEC_PER_MSEC));
		b->away_until_usec = USEC_INFINITY;
		set_unknown(b, true, "logind is back on the system bus: listing its inhibitors");
		(void)qj_lgi_update_failclosed(b);
	} else if (new_owner[0]) {
		log_info("logind: appeared on the system bus, listing its inhibitors");
	}
	if (new_owner[0]) {
		(void)request_list(b);
		return 0;
	}
	logind_left(b);
	return 0;
}

static void bus_lost(struct qj_logind *b, int r)
{
	size_t n = qj_lgi_drop_all(b);

	log_warning_errno(r,
			  "logind: the system bus connection is gone (%m): %zu inhibitor "
			  "hold(s) dropped; the bridge stays off until the policy is reloaded",
			  n);
	qj_loop_del(b->h.loop, b->fd);
	b->list_slot = sd_bus_slot_unref(b->list_slot);
	b->bus = sd_bus_flush_close_unref(b->bus);
	b->retry_at_usec = USEC_INFINITY;
	if (n > 0)
		holds_changed(b);
}

static void process(struct qj_logind *b)
{
	int r;

	while (b->bus) {
		r = sd_bus_process(b->bus, NULL);
		if (r < 0) {
			bus_lost(b, r);
			return;
		}
		if (r == 0)
			break;
	}
	update_events(b);
}

static void on_bus(struct qj_event_source *s, uint32_t events)
{
	process(container_of(s, struct qj_logind, source));
}

bool qj_logind_connected(const struct qj_logind *b)
{
	return b && b->bus;
}

uint64_t qj_logind_next_usec(const struct qj_logind *b)
{
	uint64_t t = USEC_INFINITY;

	if (!b || !b->bus)
		return USEC_INFINITY;
	if (sd_bus_get_timeout(b->bus, &t) < 0)
		t = USEC_INFINITY;
	t = t < b->retry_at_usec ? t : b->retry_at_usec;
	t = t < b->away_until_usec ? t : b->away_until_usec;
	return t < b->pending_at_usec ? t : b->pending_at_usec;
}

void qj_logind_on_timer(struct qj_logind *b, uint64_t now_usec)
{
	if (!b || !b->bus)
		return;
	if (b->retry_at_usec <= now_usec) {
		b->retry_at_usec = USEC_INFINITY;
		(void)request_list(b);
	}
	if (b->away_until_usec <= now_usec)
		away_expired(b);
	if (b->pending_at_usec <= now_usec) {
		b->pending_at_usec = USEC_INFINITY;
		if (qj_lgi_apply_all(b))
			holds_changed(b);
	}
	process(b);
}

int qj_logind_new(const struct qj_logind_handles *h, struct qj_logind **ret)
{
	struct qj_logind *b = calloc(1, sizeof(*b));
	int r;

	if (!b)
		return -ENOMEM;
	b->h = *h;
	b->fd = -EBADF;
	b->source.dispatch = on_bus;
	b->retry_at_usec = USEC_INFINITY;
	b->away_until_usec = USEC_INFINITY;
	b->pending_at_usec = USEC_INFINITY;
	r = sd_bus_open_system(&b->bus);
	if (r >= 0)
		r = sd_bus_match_signal_async(b->bus, NULL, LOGIND_NAME, LOGIND_PATH,
					      "org.freedesktop.DBus.Properties",
					      "PropertiesChanged", on_properties_changed, NULL, b);
	if (r >= 0)
		r = sd_bus_match_signal_async(b->bus, NULL, "org.freedesktop.DBus",
					      "/org/freedesktop/DBus", "org.freedesktop.DBus",
					      "NameOwnerChanged", on_name_owner_changed, NULL, b);
	if (r >= 0) {
		b->fd = sd_bus_get_fd(b->bus);
		r = b->fd < 0 ? b->fd : qj_loop_add(b->h.loop, &b->source, b->fd, 0);
	}
	if (r < 0) {
		b->fd = -EBADF;
		qj_logind_free(b);
		return r;
	}
	/* Until the first list answers, the inhibitors are unknown: fail closed. */
	set_unknown(b, true, "listing logind's inhibitors");
	(void)qj_lgi_update_failclosed(b);
	r = request_list(b);
	if (r < 0) {
		qj_logind_free(b);
		return r;
	}
	*ret = b;
	return 0;
}

struct qj_logind *qj_logind_free(struct qj_logind *b)
{
	if (!b)
		return NULL;
	(void)qj_lgi_drop_all(b);
	free(b->v);
	if (b->bus && b->fd >= 0)
		qj_loop_del(b->h.loop, b->fd);
	b->list_slot = sd_bus_slot_unref(b->list_slot);
	sd_bus_flush_close_unref(b->bus);
	free(b->owner);
	free(b);
	return NULL;
}
