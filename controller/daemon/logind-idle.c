// SPDX-License-Identifier: LGPL-2.1-or-later
/* The idle-hint bridge (see logind-idle.h; the design and its limits: docs/decisions.md). */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/pidfd.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "engine.h"
#include "holds.h"
#include "log.h"
#include "logind-idle-monitor.h"
#include "logind-idle.h"
#include "logind.h"
#include "loop.h"
#include "policy.h"
#include "proc.h"
#include "util.h"

#define LOGIND_NAME "org.freedesktop.login1"
#define LOGIND_PATH "/org/freedesktop/login1"
#define LOGIND_MANAGER "org.freedesktop.login1.Manager"
#define LOGIND_SESSION "org.freedesktop.login1.Session"
#define DRIVER_NAME "org.freedesktop.DBus"
#define HOLD_NAME "logind:user-active"
/* Connection id of the bridge's hold: apart from the IPC server's and logind.c's. */
#define HOLD_CONN (UINT64_C(1) << 61)
#define RETRY_INITIAL_USEC (1 * USEC_PER_SEC)
#define RETRY_MAX_USEC (60 * USEC_PER_SEC)
#define SESSIONS_MAX 256
#define USERS_MAX 256

struct idle_session {
	struct qj_logind_idle *b;
	sd_bus_slot *slot; /* its GetAll in flight */
	char *path;
	char id[64], seat[64], type[16], cls[16];
	uid_t uid;
	pid_t leader;
	bool active, remote, idle, read;
};

/* The last hint a process of @uid that is not jailed set: -1 none seen, else the value. */
struct idle_user {
	uid_t uid;
	int hint;
};

struct qj_logind_idle {
	struct qj_event_source source; /* the bus connection's fd */
	int fd;
	struct qj_idle_monitor mon;
	struct qj_logind_handles h;
	sd_bus *bus;
	char *owner; /* logind's unique name, "" unknown */
	sd_bus_slot *list_slot;
	bool relist;
	struct idle_session *reading; /* the list being read */
	size_t n_reading, reading_left;
	struct idle_session *sessions; /* the last list read whole */
	size_t n_sessions;
	bool known; /* sessions is logind's list */
	char unknown_why[QJ_HOLD_REASON_MAX + 1];
	struct idle_user users[USERS_MAX];
	size_t n_users;
	uint64_t n_ignored;
	uint64_t retry_usec, retry_at_usec; /* a failed read or monitor, retried */
	uint64_t away_since_usec, away_until_usec;
	bool held;
	char held_why[QJ_HOLD_REASON_MAX + 1];
	uid_t held_uid;
	pid_t held_pid;
};

static void evaluate(struct qj_logind_idle *b);
static void refresh(struct qj_logind_idle *b);
static void monitor_start(struct qj_logind_idle *b);

static void update_events(struct qj_logind_idle *b)
{
	int e;

	if (!b->bus || b->fd < 0)
		return;
	e = sd_bus_get_events(b->bus);
	if (e < 0)
		return;
	(void)qj_loop_mod(b->h.loop, &b->source, b->fd, e & POLLOUT ? EPOLLOUT : 0);
}

static void sessions_free(struct idle_session *v, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		sd_bus_slot_unref(v[k].slot);
		free(v[k].path);
	}
	free(v);
}

static void retry_later(struct qj_logind_idle *b, const char *why)
{
	b->retry_usec = b->retry_usec ? b->retry_usec * 2 : RETRY_INITIAL_USEC;
	if (b->retry_usec > RETRY_MAX_USEC)
		b->retry_usec = RETRY_MAX_USEC;
	b->retry_at_usec = now_usec(CLOCK_MONOTONIC) + b->retry_usec;
	snprintf(b->unknown_why, sizeof(b->unknown_why), "%s", why);
	b->known = false;
	log_warning("logind idle hint: %s; holding the system awake, retrying in %" PRIu64 " s",
		    why, (uint64_t)(b->retry_usec / USEC_PER_SEC));
	evaluate(b);
}

static bool graphical(const char *type)
{
	return strcmp(type, "x11") == 0 || strcmp(type, "wayland") == 0 || strcmp(type, "mir") == 0;
}

static int user_hint(const struct qj_logind_idle *b, uid_t uid)
{
	for (size_t k = 0; k < b->n_users; k++)
		if (b->users[k].uid == uid)
			return b->users[k].hint;
	return -1;
}

/* The session that keeps the system awake: active, local, a user's, graphical, not idle. */
static const struct idle_session *active_session(const struct qj_logind_idle *b)
{
	for (size_t k = 0; k < b->n_sessions; k++) {
		const struct idle_session *s = &b->sessions[k];

		if (s->active && !s->remote && strcmp(s->cls, "user") == 0 && graphical(s->type) &&
		    !s->idle && user_hint(b, s->uid) == 0)
			return s;
	}
	return NULL;
}

static void hold_release(struct qj_logind_idle *b)
{
	if (!b->held)
		return;
	(void)qj_holds_release(b->h.holds, HOLD_CONN, HOLD_NAME, now_usec(CLOCK_MONOTONIC));
	b->held = false;
	log_info("logind idle hint: hold '%s' released", HOLD_NAME);
	qj_loop_post(b->h.loop, b->h.holds_changed);
}

static void hold_take(struct qj_logind_idle *b, const char *why, uid_t uid, pid_t pid)
{
	struct qj_hold_owner owner = { .pid = pid, .uid = uid };
	char path[64];
	FILE *f;
	int r;

	if (b->held && b->held_uid == uid && b->held_pid == pid && strcmp(why, b->held_why) == 0)
		return;
	if (b->held && (b->held_uid != uid || b->held_pid != pid)) {
		(void)qj_holds_release(b->h.holds, HOLD_CONN, HOLD_NAME, now_usec(CLOCK_MONOTONIC));
		b->held = false;
	}
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = pid > 0 ? fopen(path, "re") : NULL;
	if (f) {
		if (fgets(owner.comm, sizeof(owner.comm), f))
			owner.comm[strcspn(owner.comm, "\n")] = '\0';
		fclose(f);
	}
	r = qj_holds_acquire(b->h.holds, HOLD_CONN, HOLD_NAME, why, &owner, 0,
			     now_usec(CLOCK_MONOTONIC));
	if (r < 0 && uid != 0) {
		/* The user's room is full: root's room keeps the hold, the reason says why. */
		owner.uid = 0;
		r = qj_holds_acquire(b->h.holds, HOLD_CONN, HOLD_NAME, why, &owner, 0,
				     now_usec(CLOCK_MONOTONIC));
	}
	if (r < 0) {
		log_error_errno(r, "logind idle hint: cannot take the hold '%s': %m", HOLD_NAME);
		return;
	}
	if (!b->held || strcmp(why, b->held_why) != 0)
		log_info("logind idle hint: hold '%s': %s", HOLD_NAME, why);
	b->held = true;
	b->held_uid = owner.uid;
	b->held_pid = pid;
	snprintf(b->held_why, sizeof(b->held_why), "%s", why);
	qj_loop_post(b->h.loop, b->h.holds_changed);
}

/* Takes, changes or releases the hold as the bridge's state says. */
static void evaluate(struct qj_logind_idle *b)
{
	const struct idle_session *s;
	char why[QJ_HOLD_REASON_MAX + 1];
	bool away = b->away_until_usec != USEC_INFINITY;

	if (away) {
		snprintf(why, sizeof(why),
			 "logind left the system bus: the sessions are unknown until it is back "
			 "(at most %" PRIu64 " s, logind.absent_max)",
			 (uint64_t)((b->away_until_usec - b->away_since_usec) / USEC_PER_SEC));
		hold_take(b, why, 0, getpid());
		return;
	}
	if (!b->mon.up || !b->known) {
		snprintf(why, sizeof(why), "%s",
			 !b->mon.up && b->known ?
				 "who sets the sessions' idle hints is not known (no bus monitor)" :
				 b->unknown_why);
		hold_take(b, why, 0, getpid());
		return;
	}
	s = active_session(b);
	if (!s) {
		hold_release(b);
		return;
	}
	snprintf(why, sizeof(why), "session %s of uid %u on %s is active and not idle", s->id,
		 (unsigned)s->uid, s->seat[0] ? s->seat : "no seat");
	hold_take(b, why, s->uid, s->leader);
}

/* ---- reading the sessions: ListSessions, then GetAll of each ---- */

static int read_prop(sd_bus_message *m, struct idle_session *s, const char *key)
{
	const char *str, *path;
	uint32_t u;
	int v, r;

	if (strcmp(key, "Active") == 0 || strcmp(key, "Remote") == 0 ||
	    strcmp(key, "IdleHint") == 0) {
		r = sd_bus_message_read(m, "v", "b", &v);
		if (r >= 0)
			*(key[0] == 'A' ? &s->active : key[0] == 'R' ? &s->remote : &s->idle) = v;
		return r;
	}
	if (strcmp(key, "Type") == 0 || strcmp(key, "Class") == 0) {
		r = sd_bus_message_read(m, "v", "s", &str);
		if (r >= 0 && key[0] == 'T')
			snprintf(s->type, sizeof(s->type), "%s", str);
		else if (r >= 0)
			snprintf(s->cls, sizeof(s->cls), "%s", str);
		return r;
	}
	if (strcmp(key, "Seat") == 0) {
		r = sd_bus_message_read(m, "v", "(so)", &str, &path);
		if (r >= 0)
			snprintf(s->seat, sizeof(s->seat), "%s", str);
		return r;
	}
	if (strcmp(key, "Leader") == 0) {
		r = sd_bus_message_read(m, "v", "u", &u);
		if (r >= 0)
			s->leader = (pid_t)u;
		return r;
	}
	return sd_bus_message_skip(m, "v");
}

static void read_done(struct qj_logind_idle *b)
{
	sessions_free(b->sessions, b->n_sessions);
	b->sessions = b->reading;
	b->n_sessions = b->n_reading;
	b->reading = NULL;
	b->n_reading = 0;
	if (!b->known)
		log_info("logind idle hint: %zu session(s) read", b->n_sessions);
	b->known = true;
	b->retry_usec = 0;
	b->retry_at_usec = USEC_INFINITY;
	evaluate(b);
	if (b->relist) {
		b->relist = false;
		refresh(b);
	}
}

static void read_failed(struct qj_logind_idle *b, const char *what)
{
	char why[QJ_HOLD_REASON_MAX + 1];

	sessions_free(b->reading, b->n_reading);
	b->reading = NULL;
	b->n_reading = b->reading_left = 0;
	b->relist = false;
	snprintf(why, sizeof(why), "reading logind's sessions failed (%s)", what);
	retry_later(b, why);
}

static int on_session_props(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct idle_session *s = userdata;
	struct qj_logind_idle *b = s->b;
	const sd_bus_error *e = sd_bus_message_get_error(m);
	const char *key;
	int r;

	s->slot = sd_bus_slot_unref(s->slot);
	if (e && sd_bus_error_has_name(e, SD_BUS_ERROR_UNKNOWN_OBJECT)) {
		s->read = false; /* it ended in between: the next list says so */
	} else if (e) {
		read_failed(b, e->name);
		return 0;
	} else {
		r = sd_bus_message_enter_container(m, 'a', "{sv}");
		while (r >= 0 && (r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
			r = sd_bus_message_read(m, "s", &key);
			if (r >= 0)
				r = read_prop(m, s, key);
			if (r >= 0)
				r = sd_bus_message_exit_container(m);
		}
		if (r < 0) {
			read_failed(b, "an unreadable session");
			return 0;
		}
		s->read = true;
	}
	if (--b->reading_left == 0)
		read_done(b);
	return 0;
}

static int on_list_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct qj_logind_idle *b = userdata;
	const sd_bus_error *e = sd_bus_message_get_error(m);
	const char *id, *user, *seat, *path;
	uint32_t uid;
	size_t n = 0;
	int r;

	b->list_slot = sd_bus_slot_unref(b->list_slot);
	if (e) {
		read_failed(b, e->name);
		return 0;
	}
	b->reading = calloc(SESSIONS_MAX, sizeof(*b->reading));
	if (!b->reading) {
		read_failed(b, strerror(ENOMEM));
		return 0;
	}
	r = sd_bus_message_enter_container(m, 'a', "(susso)");
	while (r >= 0 &&
	       (r = sd_bus_message_read(m, "(susso)", &id, &uid, &user, &seat, &path)) > 0) {
		struct idle_session *s = &b->reading[n];

		if (n == SESSIONS_MAX) {
			r = -E2BIG;
			break;
		}
		*s = (struct idle_session){ .b = b, .uid = (uid_t)uid };
		snprintf(s->id, sizeof(s->id), "%s", id);
		s->path = strdup(path);
		n++;
		r = s->path ? 0 : -ENOMEM;
	}
	b->n_reading = n;
	if (r < 0) {
		read_failed(b, strerror(-r));
		return 0;
	}
	/* The reply comes from logind's unique name: its signals must come from there too. */
	free(b->owner);
	b->owner = strdup(sd_bus_message_get_sender(m) ?: "");
	/* The answers come in sd_bus_process(), never inside these calls. */
	b->reading_left = n;
	for (size_t k = 0; k < n; k++) {
		r = sd_bus_call_method_async(b->bus, &b->reading[k].slot, LOGIND_NAME,
					     b->reading[k].path, "org.freedesktop.DBus.Properties",
					     "GetAll", on_session_props, &b->reading[k], "s",
					     LOGIND_SESSION);
		if (r < 0) {
			read_failed(b, strerror(-r));
			return 0;
		}
	}
	if (n == 0)
		read_done(b);
	return 0;
}

static void refresh(struct qj_logind_idle *b)
{
	int r;

	if (b->list_slot || b->reading) {
		b->relist = true;
		return;
	}
	r = sd_bus_call_method_async(b->bus, &b->list_slot, LOGIND_NAME, LOGIND_PATH,
				     LOGIND_MANAGER, "ListSessions", on_list_reply, b, NULL);
	if (r < 0)
		read_failed(b, strerror(-r));
}

/* ---- logind's signals: any change of a session, or of the list, reads them again ---- */

static bool from_logind(struct qj_logind_idle *b, sd_bus_message *m)
{
	const char *sender = sd_bus_message_get_sender(m);

	if (b->owner && b->owner[0] && sender && strcmp(sender, b->owner) == 0)
		return true;
	b->n_ignored++;
	if ((b->n_ignored & (b->n_ignored - 1)) == 0) /* 1st, 2nd, 4th...: a flood logs little */
		log_notice("logind idle hint: ignoring %s from %s, which is not logind (%" PRIu64
			   " such message(s) so far)",
			   sd_bus_message_get_member(m), sender ? sender : "(no sender)",
			   b->n_ignored);
	return false;
}

static int on_logind_signal(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct qj_logind_idle *b = userdata;
	const char *path = sd_bus_message_get_path(m);

	if (!b->owner || !b->owner[0])
		return 0; /* no list answered yet: the read in flight (or its retry) decides */
	if (!from_logind(b, m))
		return 0;
	if (sd_bus_message_is_signal(m, "org.freedesktop.DBus.Properties", "PropertiesChanged") &&
	    (!path || strncmp(path, LOGIND_PATH "/session/", strlen(LOGIND_PATH "/session/")) != 0))
		return 0;
	refresh(b);
	return 0;
}

static int on_name_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct qj_logind_idle *b = userdata;
	const char *sender = sd_bus_message_get_sender(m), *name, *old_owner, *new_owner;
	uint64_t t = now_usec(CLOCK_MONOTONIC);

	if (!sender || strcmp(sender, DRIVER_NAME) != 0) {
		(void)from_logind(b, m); /* logs the forgery */
		return 0;
	}
	if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) < 0 ||
	    strcmp(name, LOGIND_NAME) != 0)
		return 0;
	free(b->owner);
	b->owner = strdup(new_owner);
	if (new_owner[0]) {
		log_info("logind idle hint: logind is on the system bus, reading its sessions");
		b->away_until_usec = USEC_INFINITY;
		b->known = false;
		snprintf(b->unknown_why, sizeof(b->unknown_why),
			 "logind is back on the system bus: reading its sessions");
		evaluate(b);
		refresh(b);
		return 0;
	}
	b->known = false;
	snprintf(b->unknown_why, sizeof(b->unknown_why), "logind is not on the system bus");
	if ((*b->h.policy)->logind_absent_max_usec > 0 && b->away_until_usec == USEC_INFINITY) {
		b->away_since_usec = t;
		b->away_until_usec = t + (*b->h.policy)->logind_absent_max_usec;
		log_notice("logind idle hint: logind left the system bus; the hold '%s' keeps the "
			   "system awake until it is back, for at most %" PRIu64
			   " s (logind.absent_max)",
			   HOLD_NAME,
			   (uint64_t)((*b->h.policy)->logind_absent_max_usec / USEC_PER_SEC));
		evaluate(b);
	} else if (b->away_until_usec == USEC_INFINITY) {
		log_info("logind idle hint: logind left the system bus (logind.absent_max is 0)");
		hold_release(b);
	}
	return 0;
}

/* ---- the loop ---- */

static void bus_lost(struct qj_logind_idle *b, int r)
{
	log_warning_errno(r, "logind idle hint: the system bus connection is gone (%m); the "
			     "bridge stays off until the policy is reloaded");
	qj_loop_del(b->h.loop, b->fd);
	b->fd = -EBADF;
	qj_idle_monitor_close(&b->mon);
	b->bus = sd_bus_flush_close_unref(b->bus);
	b->retry_at_usec = b->away_until_usec = USEC_INFINITY;
	hold_release(b);
}

static void process(struct qj_logind_idle *b)
{
	char why[QJ_HOLD_REASON_MAX + 1];
	int r;

	while (b->bus && (r = sd_bus_process(b->bus, NULL)) != 0)
		if (r < 0) {
			bus_lost(b, r);
			return;
		}
	r = qj_idle_monitor_process(&b->mon);
	if (r < 0) {
		/* Without the monitor no hint can be attributed: held, and retried. */
		snprintf(why, sizeof(why), "the bus monitor connection is gone (%s)", strerror(-r));
		retry_later(b, why);
	}
	update_events(b);
}

static void on_bus(struct qj_event_source *s, uint32_t events)
{
	process(container_of(s, struct qj_logind_idle, source));
}

static void on_monitor(struct qj_event_source *s, uint32_t events)
{
	process(container_of(s, struct qj_logind_idle, mon.source));
}

/* ---- the monitor's reports ---- */

static struct idle_user *user_slot(struct qj_logind_idle *b, uid_t uid)
{
	for (size_t k = 0; k < b->n_users; k++)
		if (b->users[k].uid == uid)
			return &b->users[k];
	if (b->n_users == USERS_MAX)
		return NULL;
	b->users[b->n_users] = (struct idle_user){ .uid = uid, .hint = -1 };
	return &b->users[b->n_users++];
}

/*
 * A caller that is not jailed set @value on @path: the hint of the session's uid (root
 * may set any session's), or of its own uid for a path that names no known session
 * ("auto", "self": the caller's own).  A call logind refuses (another user's session)
 * changes nothing.
 */
static void on_hint(struct qj_idle_monitor *m, uid_t caller, const char *path, int value)
{
	struct qj_logind_idle *b = container_of(m, struct qj_logind_idle, mon);
	struct idle_user *u;
	uid_t uid = caller;

	for (size_t k = 0; k < b->n_sessions; k++)
		if (strcmp(b->sessions[k].path, path) == 0) {
			if (caller != 0 && caller != b->sessions[k].uid)
				return;
			uid = b->sessions[k].uid;
			break;
		}
	u = user_slot(b, uid);
	if (!u)
		return;
	u->hint = value;
	evaluate(b);
}

static void on_monitor_state(struct qj_idle_monitor *m, const char *why)
{
	struct qj_logind_idle *b = container_of(m, struct qj_logind_idle, mon);

	if (why)
		retry_later(b, why);
	else
		evaluate(b);
}

static void monitor_start(struct qj_logind_idle *b)
{
	int r = qj_idle_monitor_start(&b->mon);
	char why[QJ_HOLD_REASON_MAX + 1];

	if (r < 0) {
		snprintf(why, sizeof(why), "cannot connect the bus monitor (%s)", strerror(-r));
		retry_later(b, why);
	}
}

bool qj_logind_idle_connected(const struct qj_logind_idle *b)
{
	return b && b->bus;
}

uint64_t qj_logind_idle_next_usec(const struct qj_logind_idle *b)
{
	uint64_t t = USEC_INFINITY, m = USEC_INFINITY;

	if (!b || !b->bus)
		return USEC_INFINITY;
	if (sd_bus_get_timeout(b->bus, &t) < 0)
		t = USEC_INFINITY;
	m = qj_idle_monitor_timeout(&b->mon);
	t = t < m ? t : m;
	t = t < b->retry_at_usec ? t : b->retry_at_usec;
	return t < b->away_until_usec ? t : b->away_until_usec;
}

void qj_logind_idle_on_timer(struct qj_logind_idle *b, uint64_t now_usec)
{
	if (!b || !b->bus)
		return;
	if (b->retry_at_usec <= now_usec) {
		b->retry_at_usec = USEC_INFINITY;
		if (!b->mon.mon)
			monitor_start(b);
		if (!b->known && b->away_until_usec == USEC_INFINITY)
			refresh(b);
	}
	if (b->away_until_usec <= now_usec) {
		log_warning("logind idle hint: logind away from the system bus for %" PRIu64
			    " s (logind.absent_max): the hold '%s' is dropped until it is back",
			    (uint64_t)((now_usec - b->away_since_usec) / USEC_PER_SEC), HOLD_NAME);
		b->away_until_usec = USEC_INFINITY;
		hold_release(b);
	}
	process(b);
}

int qj_logind_idle_new(const struct qj_logind_handles *h, struct qj_logind_idle **ret)
{
	struct qj_logind_idle *b = calloc(1, sizeof(*b));
	int r;

	if (!b)
		return -ENOMEM;
	b->h = *h;
	b->fd = -EBADF;
	b->source.dispatch = on_bus;
	b->mon.h = &b->h;
	b->mon.fd = -EBADF;
	b->mon.source.dispatch = on_monitor;
	b->mon.logind_owner = &b->owner;
	b->mon.on_hint = on_hint;
	b->mon.on_state = on_monitor_state;
	b->retry_at_usec = b->away_until_usec = USEC_INFINITY;
	snprintf(b->unknown_why, sizeof(b->unknown_why), "reading logind's sessions");
	r = sd_bus_open_system(&b->bus);
	if (r >= 0)
		r = sd_bus_match_signal_async(b->bus, NULL, LOGIND_NAME, NULL,
					      "org.freedesktop.DBus.Properties",
					      "PropertiesChanged", on_logind_signal, NULL, b);
	if (r >= 0)
		r = sd_bus_match_signal_async(b->bus, NULL, LOGIND_NAME, LOGIND_PATH,
					      LOGIND_MANAGER, "SessionNew", on_logind_signal, NULL,
					      b);
	if (r >= 0)
		r = sd_bus_match_signal_async(b->bus, NULL, LOGIND_NAME, LOGIND_PATH,
					      LOGIND_MANAGER, "SessionRemoved", on_logind_signal,
					      NULL, b);
	if (r >= 0)
		r = sd_bus_match_signal_async(b->bus, NULL, DRIVER_NAME, "/org/freedesktop/DBus",
					      DRIVER_NAME, "NameOwnerChanged",
					      on_name_owner_changed, NULL, b);
	if (r >= 0) {
		b->fd = sd_bus_get_fd(b->bus);
		r = b->fd < 0 ? b->fd : qj_loop_add(b->h.loop, &b->source, b->fd, 0);
		if (r < 0)
			b->fd = -EBADF;
	}
	if (r < 0) {
		qj_logind_idle_free(b);
		return r;
	}
	/* Until the sessions are read and the monitor is up, fail closed. */
	b->mon.bus = b->bus;
	evaluate(b);
	monitor_start(b);
	refresh(b);
	update_events(b);
	*ret = b;
	return 0;
}

struct qj_logind_idle *qj_logind_idle_free(struct qj_logind_idle *b)
{
	if (!b)
		return NULL;
	if (b->held)
		(void)qj_holds_release(b->h.holds, HOLD_CONN, HOLD_NAME, now_usec(CLOCK_MONOTONIC));
	sessions_free(b->sessions, b->n_sessions);
	sessions_free(b->reading, b->n_reading);
	b->list_slot = sd_bus_slot_unref(b->list_slot);
	qj_idle_monitor_close(&b->mon);
	if (b->bus && b->fd >= 0)
		qj_loop_del(b->h.loop, b->fd);
	sd_bus_flush_close_unref(b->bus);
	free(b->owner);
	free(b);
	return NULL;
}
