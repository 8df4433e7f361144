// SPDX-License-Identifier: LGPL-2.1-or-later
/* The logind bridge (see logind.h). */
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "daemon-internal.h"
#include "holds.h"
#include "log.h"
#include "logind.h"
#include "policy.h"
#include "util.h"

#define LOGIND_NAME "org.freedesktop.login1"
#define LOGIND_PATH "/org/freedesktop/login1"
#define LOGIND_MANAGER "org.freedesktop.login1.Manager"
/* The bus driver: the only sender of a true NameOwnerChanged. */
#define DRIVER_NAME "org.freedesktop.DBus"
/* The fail-closed hold while the inhibitors are unknown. */
#define UNKNOWN_HOLD "logind"
/* Connection ids of the bridge's holds: far above the IPC server's (counted from 1). */
#define CONN_BASE (UINT64_C(1) << 62)
#define RETRY_INITIAL_USEC (1 * USEC_PER_SEC)
#define RETRY_MAX_USEC (60 * USEC_PER_SEC)

struct inhibitor {
	char *who, *why;
	uid_t uid;
	pid_t pid;
	uint64_t conn; /* its hold's connection id; 0 while it does not count */
	char name[QJ_HOLD_NAME_MAX + 1];
	bool seen; /* in the list being read */
	bool decided; /* counts() ran for it once (it logs the first decision) */
};

struct qj_logind {
	struct fd_source src;
	struct qj_daemon *d;
	sd_bus *bus;
	sd_bus_slot *list_slot; /* ListInhibitors in flight */
	bool relist; /* a change came while the list was in flight */
	bool unknown; /* the fail-closed hold is taken */
	bool logind_present;
	char *owner; /* logind's unique name ("" unknown): the only sender of its signals */
	uint64_t n_forged; /* signals refused for their sender */
	uint64_t retry_usec, retry_at_usec;
	uint64_t app_gen;
	uint64_t next_conn;
	struct inhibitor *v;
	size_t n;
};

static void update_events(struct qj_logind *b)
{
	struct epoll_event ev = { .data.ptr = &b->src.source };
	int e;

	if (!b->bus)
		return;
	e = sd_bus_get_events(b->bus);
	if (e < 0)
		return;
	ev.events = (e & POLLIN ? EPOLLIN : 0) | (e & POLLOUT ? EPOLLOUT : 0);
	(void)epoll_ctl(b->d->epoll_fd, EPOLL_CTL_MOD, b->src.fd, &ev);
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

/* Copies at most @size - 1 bytes of @s, not cutting a UTF-8 sequence (the names go out in JSON). */
static void copy_utf8(char *dst, size_t size, const char *s)
{
	size_t n = strlen(s);

	if (n >= size) {
		n = size - 1;
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
	}
	memcpy(dst, s, n);
	dst[n] = '\0';
}

static void hold_take(struct qj_logind *b, uint64_t conn, const char *name, const char *reason,
		      uid_t uid, pid_t pid)
{
	struct qj_hold_owner owner = { .pid = pid, .uid = uid };
	char why[QJ_HOLD_REASON_MAX + 1], path[64];
	FILE *f;
	int r;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = pid > 0 ? fopen(path, "re") : NULL;
	if (f) {
		if (fgets(owner.comm, sizeof(owner.comm), f))
			owner.comm[strcspn(owner.comm, "\n")] = '\0';
		fclose(f);
	}
	copy_utf8(why, sizeof(why), reason[0] ? reason : "(no reason given)");
	r = qj_holds_acquire(b->d->holds, conn, name, why, &owner, 0, qj_daemon_now());
	if (r < 0)
		log_warning_errno(r, "Failed to take hold '%s' for a logind inhibitor: %m", name);
}

static void set_unknown(struct qj_logind *b, bool unknown, const char *why)
{
	if (unknown == b->unknown)
		return;
	b->unknown = unknown;
	if (unknown)
		hold_take(b, CONN_BASE, UNKNOWN_HOLD, why, 0, getpid());
	else
		(void)qj_holds_release(b->d->holds, CONN_BASE, UNKNOWN_HOLD, qj_daemon_now());
}

static bool uid_listed(const struct qj_principals *pr, uid_t uid)
{
	struct passwd pw, *res = NULL;
	gid_t gids[64];
	int n = (int)ARRAY_SIZE(gids);
	char buf[4096];

	if (qj_principals_allow(pr, uid, NULL, 0))
		return true;
	if (pr->n_gids == 0 || getpwuid_r(uid, &pw, buf, sizeof(buf), &res) != 0 || !res)
		return false;
	if (getgrouplist(res->pw_name, res->pw_gid, gids, &n) < 0)
		n = (int)ARRAY_SIZE(gids); /* the first ones */
	return qj_principals_allow(pr, uid, gids, (size_t)n);
}

/* Whether @i keeps the system awake; logs a refusal when it changes to "no". */
static bool counts(struct qj_logind *b, struct inhibitor *i)
{
	const char *app = "";
	int r;

	if (!uid_listed(&b->d->policy->logind_inhibitors, i->uid)) {
		if (i->conn || !i->decided)
			log_info("logind inhibitor '%s' (%s) of pid %d uid %u does not count: uid "
				 "not in logind.inhibitors of the policy",
				 i->who, i->why, (int)i->pid, (unsigned)i->uid);
		return false;
	}
	r = qj_daemon_pid_app(b->d, i->pid, &app);
	if (r != 0) {
		/* Like a jailed client's hold: a jailed (or unknown) process keeps nothing awake. */
		if (i->conn || !i->decided)
			log_notice(
				"logind inhibitor '%s' (%s) of pid %d uid %u does not count: %s%s",
				i->who, i->why, (int)i->pid, (unsigned)i->uid,
				r > 0 ? "jailed in app " : "cannot tell whether it is jailed",
				r > 0 ? app : "");
		return false;
	}
	return true;
}

/* Takes or releases @i's hold as counts() says; true when the hold count changed. */
static bool apply(struct qj_logind *b, struct inhibitor *i)
{
	bool c = counts(b, i);

	i->decided = true;
	if (c == (i->conn != 0))
		return false;
	if (c) {
		i->conn = CONN_BASE + ++b->next_conn;
		log_info("logind inhibitor '%s' (%s) of pid %d uid %u holds the system awake as "
			 "hold '%s'",
			 i->who, i->why, (int)i->pid, (unsigned)i->uid, i->name);
		hold_take(b, i->conn, i->name, i->why, i->uid, i->pid);
	} else {
		(void)qj_holds_release(b->d->holds, i->conn, i->name, qj_daemon_now());
		i->conn = 0;
	}
	return true;
}

static void inhibitor_drop(struct qj_logind *b, size_t k)
{
	struct inhibitor *i = &b->v[k];

	if (i->conn)
		(void)qj_holds_release(b->d->holds, i->conn, i->name, qj_daemon_now());
	free(i->who);
	free(i->why);
	b->v[k] = b->v[--b->n];
}

/* Drops every inhibitor and the fail-closed hold; returns how many holds went. */
static size_t drop_all(struct qj_logind *b)
{
	size_t n = b->unknown;

	set_unknown(b, false, NULL);
	while (b->n > 0) {
		n += b->v[b->n - 1].conn != 0;
		inhibitor_drop(b, b->n - 1);
	}
	return n;
}

void qj_logind_recheck(struct qj_logind *b, bool force)
{
	bool changed = false;

	if (!b || (!force && b->app_gen == b->d->app_gen))
		return;
	b->app_gen = b->d->app_gen;
	for (size_t k = 0; k < b->n; k++)
		changed |= apply(b, &b->v[k]);
	if (changed)
		qj_daemon_holds_changed(b->d);
}

static int find_or_add(struct qj_logind *b, const char *who, const char *why, uid_t uid, pid_t pid)
{
	struct inhibitor *i, *v;
	char name[QJ_HOLD_NAME_MAX + 1];

	for (size_t k = 0; k < b->n; k++) {
		i = &b->v[k];
		if (!i->seen && i->uid == uid && i->pid == pid && strcmp(i->who, who) == 0 &&
		    strcmp(i->why, why) == 0) {
			i->seen = true;
			return 0;
		}
	}
	v = realloc(b->v, (b->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	b->v = v;
	i = &v[b->n];
	*i = (struct inhibitor){ .uid = uid, .pid = pid, .seen = true };
	snprintf(name, sizeof(name), "logind:%s", who);
	copy_utf8(i->name, sizeof(i->name), name);
	i->who = strdup(who);
	i->why = strdup(why);
	if (!i->who || !i->why) {
		free(i->who);
		free(i->why);
		return -ENOMEM;
	}
	b->n++;
	return 1;
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

static void list_failed(struct qj_logind *b, int r, const char *what)
{
	char why[QJ_HOLD_REASON_MAX];

	snprintf(why, sizeof(why), "ListInhibitors failed (%s): the inhibitors are unknown", what);
	log_warning("logind: %s; holding the system awake, retrying in %llu s", why,
		    (unsigned long long)((b->retry_usec ? b->retry_usec : RETRY_INITIAL_USEC) /
					 USEC_PER_SEC));
	(void)r;
	set_unknown(b, true, why);
	b->retry_usec = b->retry_usec ? b->retry_usec * 2 : RETRY_INITIAL_USEC;
	if (b->retry_usec > RETRY_MAX_USEC)
		b->retry_usec = RETRY_MAX_USEC;
	b->retry_at_usec = qj_daemon_now() + b->retry_usec;
	qj_daemon_holds_changed(b->d);
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
	if (e && is_absent_error(e)) {
		/* No logind on this bus: nobody can hold an inhibitor.  Its arrival re-lists. */
		if (b->logind_present || b->unknown || b->n)
			log_info("logind: not on the system bus, no inhibitors to follow");
		b->logind_present = false;
		set_owner(b, "");
		b->retry_usec = 0;
		b->retry_at_usec = USEC_INFINITY;
		if (drop_all(b) > 0)
			qj_daemon_holds_changed(b->d);
		return 0;
	}
	if (e) {
		list_failed(b, -sd_bus_error_get_errno(e), e->name);
		return 0;
	}
	/* The reply comes from logind's unique name: its signals must come from there too. */
	set_owner(b, sd_bus_message_get_sender(m));
	for (size_t k = 0; k < b->n; k++)
		b->v[k].seen = false;
	r = sd_bus_message_enter_container(m, 'a', "(ssssuu)");
	while (r >= 0 &&
	       (r = sd_bus_message_read(m, "(ssssuu)", &what, &who, &why, &mode, &uid, &pid)) > 0) {
		if (!what_has_sleep(what) || strcmp(mode, "block") != 0)
			continue;
		r = find_or_add(b, who, why, (uid_t)uid, (pid_t)pid);
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
	for (size_t k = b->n; k-- > 0;)
		if (!b->v[k].seen) {
			log_info("logind inhibitor '%s' (%s) of pid %d uid %u released",
				 b->v[k].who, b->v[k].why, (int)b->v[k].pid, (unsigned)b->v[k].uid);
			inhibitor_drop(b, k);
		}
	for (size_t k = 0; k < b->n; k++)
		(void)apply(b, &b->v[k]);
	b->logind_present = true;
	b->retry_usec = 0;
	b->retry_at_usec = USEC_INFINITY;
	b->app_gen = b->d->app_gen;
	set_unknown(b, false, NULL);
	qj_daemon_holds_changed(b->d);
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
	size_t n;

	if (!sent_by(b, m, DRIVER_NAME))
		return 0;
	if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) < 0 ||
	    strcmp(name, LOGIND_NAME) != 0)
		return 0;
	set_owner(b, new_owner);
	if (new_owner[0]) {
		log_info("logind: appeared on the system bus, listing its inhibitors");
		(void)request_list(b);
		return 0;
	}
	b->logind_present = false;
	n = drop_all(b);
	log_info("logind: left the system bus, its %zu inhibitor hold(s) dropped", n);
	if (n > 0)
		qj_daemon_holds_changed(b->d);
	return 0;
}

static void bus_lost(struct qj_logind *b, int r)
{
	size_t n = drop_all(b);

	log_warning_errno(r,
			  "logind: the system bus connection is gone (%m): %zu inhibitor "
			  "hold(s) dropped; the bridge stays off until the policy is reloaded",
			  n);
	(void)epoll_ctl(b->d->epoll_fd, EPOLL_CTL_DEL, b->src.fd, NULL);
	b->list_slot = sd_bus_slot_unref(b->list_slot);
	b->bus = sd_bus_flush_close_unref(b->bus);
	b->retry_at_usec = USEC_INFINITY;
	if (n > 0)
		qj_daemon_holds_changed(b->d);
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
	process(((struct fd_source *)s)->d->logind);
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
	return t < b->retry_at_usec ? t : b->retry_at_usec;
}

void qj_logind_on_timer(struct qj_logind *b, uint64_t now_usec)
{
	if (!b || !b->bus)
		return;
	if (b->retry_at_usec <= now_usec) {
		b->retry_at_usec = USEC_INFINITY;
		(void)request_list(b);
	}
	process(b);
}

int qj_logind_new(struct qj_daemon *d, struct qj_logind **ret)
{
	struct qj_logind *b = calloc(1, sizeof(*b));
	struct epoll_event ev = { .events = EPOLLIN };
	int r;

	if (!b)
		return -ENOMEM;
	b->d = d;
	b->src.fd = -EBADF;
	b->src.d = d;
	b->src.source.dispatch = on_bus;
	b->retry_at_usec = USEC_INFINITY;
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
		b->src.fd = sd_bus_get_fd(b->bus);
		ev.data.ptr = &b->src.source;
		r = b->src.fd < 0					      ? b->src.fd :
		    epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, b->src.fd, &ev) < 0 ? -errno :
										0;
	}
	if (r < 0) {
		b->src.fd = -EBADF;
		qj_logind_free(b);
		return r;
	}
	/* Until the first list answers, the inhibitors are unknown: fail closed. */
	set_unknown(b, true, "listing logind's inhibitors");
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
	(void)drop_all(b);
	free(b->v);
	if (b->bus && b->src.fd >= 0)
		(void)epoll_ctl(b->d->epoll_fd, EPOLL_CTL_DEL, b->src.fd, NULL);
	b->list_slot = sd_bus_slot_unref(b->list_slot);
	sd_bus_flush_close_unref(b->bus);
	free(b->owner);
	free(b);
	return NULL;
}
