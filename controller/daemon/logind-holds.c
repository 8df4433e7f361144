// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The logind bridge's inhibitors as holds (see logind.h): which inhibitor counts, the
 * per-uid bound they share with socket holds, and the fail-closed hold "logind" that
 * keeps the system awake whenever an inhibitor that should hold is not a hold (the list
 * is unknown, logind is away from the bus, or a hold could not be taken).
 */
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <unistd.h>

#include "engine.h"
#include "holds.h"
#include "log.h"
#include "logind-internal.h"
#include "policy.h"
#include "proc.h"
#include "util.h"

/* The fail-closed hold. */
#define FAILCLOSED_HOLD "logind"
/* Connection ids of the bridge's holds: far above the IPC server's (counted from 1). */
#define CONN_BASE (UINT64_C(1) << 62)
#define PENDING_RETRY_INITIAL_USEC (1 * USEC_PER_SEC)
#define PENDING_RETRY_MAX_USEC (60 * USEC_PER_SEC)

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

static int hold_take(struct qj_logind *b, uint64_t conn, const char *name, const char *reason,
		     uid_t uid, pid_t pid)
{
	struct qj_hold_owner owner = { .pid = pid, .uid = uid };
	char why[QJ_HOLD_REASON_MAX + 1], path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = pid > 0 ? fopen(path, "re") : NULL;
	if (f) {
		if (fgets(owner.comm, sizeof(owner.comm), f))
			owner.comm[strcspn(owner.comm, "\n")] = '\0';
		fclose(f);
	}
	copy_utf8(why, sizeof(why), reason[0] ? reason : "(no reason given)");
	return qj_holds_acquire(b->h.holds, conn, name, why, &owner, 0, now_usec(CLOCK_MONOTONIC));
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

/*
 * Jail membership of @i's process, fail-closed like a socket client's: 1 (and *ret_app)
 * jailed, 0 not, negative errno unknown.  Read by pid, then the pidfd opened when the
 * inhibitor was first seen is checked alive, so the pid still named that process.  Once
 * it exited (the inhibitor's fd handed to a child lives on) the last answer read while it
 * lived stays; without one it is unknown for good.
 */
static int inhibitor_app(struct qj_logind *b, struct qj_lgi_inhibitor *i, const char **ret_app)
{
	const char *app = "";
	int r;

	*ret_app = i->app;
	if (i->app_final)
		return i->app_r;
	if (i->pidfd == -EBADF || i->pidfd == -EMFILE || i->pidfd == -ENFILE) {
		i->pidfd = i->pid > 0 ? pidfd_open(i->pid, 0) : -1;
		if (i->pidfd < 0)
			i->pidfd = i->pid > 0 ? -errno : -ESRCH;
	}
	if (i->pidfd == -ESRCH) {
		i->app_final = true; /* gone before it was ever seen: never known */
		i->app_r = -ESRCH;
		return i->app_r;
	}
	if (i->pidfd < 0 && i->pidfd != -ENOSYS)
		return i->pidfd; /* cannot pin it now (out of fds): unknown, asked again */
	/* As qj_daemon_pid_app(), not called: this file imports nothing of daemon.c. */
	if (b->h.engine)
		r = qj_engine_app_of_pid(b->h.engine, i->pid, &app);
	else
		r = b->h.membership ? b->h.membership(0, i->pid, &app) : 0;
	if (i->pidfd >= 0 && qj_pidfd_exited(i->pidfd)) {
		i->app_final = true;
		close(i->pidfd);
		i->pidfd = -ESRCH;
		if (!i->app_known)
			i->app_r = -ESRCH;
		return i->app_r;
	}
	i->app_r = r;
	i->app_known = r >= 0;
	snprintf(i->app, sizeof(i->app), "%s", r > 0 && app ? app : "");
	return r;
}

/* Whether @i keeps the system awake; logs a refusal when it changes to "no". */
static bool counts(struct qj_logind *b, struct qj_lgi_inhibitor *i)
{
	const char *app = "";
	int r;

	if (!uid_listed(&(*b->h.policy)->logind_inhibitors, i->uid)) {
		if (i->conn || !i->decided)
			log_info("logind inhibitor '%s' (%s) of pid %d uid %u does not count: uid "
				 "not in logind.inhibitors of the policy",
				 i->who, i->why, (int)i->pid, (unsigned)i->uid);
		return false;
	}
	r = inhibitor_app(b, i, &app);
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

/* Takes @i's hold within its uid's bound (limits.holds_per_uid, shared with socket holds). */
static int take(struct qj_logind *b, struct qj_lgi_inhibitor *i)
{
	uint64_t conn = CONN_BASE + b->next_conn + 1;
	int r;

	if (i->uid != 0 &&
	    qj_holds_count_uid(b->h.holds, i->uid) >= (*b->h.policy)->max_holds_per_uid)
		return -EDQUOT;
	r = hold_take(b, conn, i->name, i->why, i->uid, i->pid);
	if (r < 0)
		return r;
	b->next_conn++;
	i->conn = conn;
	return 0;
}

/* Takes or releases @i's hold as counts() says; true when the hold count changed. */
static bool apply(struct qj_logind *b, struct qj_lgi_inhibitor *i)
{
	bool c = counts(b, i);
	int r;

	i->decided = true;
	if (!c || i->conn) {
		i->pending = false;
		if (c || !i->conn)
			return false;
		(void)qj_holds_release(b->h.holds, i->conn, i->name, now_usec(CLOCK_MONOTONIC));
		i->conn = 0;
		return true;
	}
	r = take(b, i);
	if (r < 0) {
		/* Never "applied" without a hold: the fail-closed hold stands in, and it is retried. */
		if (!i->pending || r != i->take_error)
			log_debug(
				"logind inhibitor '%s' (%s) of pid %d uid %u is not a hold yet: %s",
				i->who, i->why, (int)i->pid, (unsigned)i->uid,
				r == -EDQUOT ? "its uid has limits.holds_per_uid holds" :
					       strerror(-r));
		i->pending = true;
		i->take_error = r;
		return false;
	}
	log_info("logind inhibitor '%s' (%s) of pid %d uid %u holds the system awake as hold '%s'",
		 i->who, i->why, (int)i->pid, (unsigned)i->uid, i->name);
	i->pending = false;
	return true;
}

bool qj_lgi_update_failclosed(struct qj_logind *b)
{
	char why[QJ_HOLD_REASON_MAX + 1];
	bool was = b->failclosed;
	int r;

	if (b->list_unknown)
		snprintf(why, sizeof(why), "%s", b->unknown_why);
	else if (b->away_until_usec != USEC_INFINITY)
		snprintf(why, sizeof(why),
			 "logind left the system bus: its inhibitors are unknown until it is back "
			 "(at most %" PRIu64 " s, logind.absent_max)",
			 (uint64_t)((b->away_until_usec - b->away_since_usec) / USEC_PER_SEC));
	else if (b->n_pending > 0)
		snprintf(why, sizeof(why),
			 "%zu logind inhibitor(s) that count could not become holds (the uid's "
			 "limits.holds_per_uid, or a full table): holding for them",
			 b->n_pending);
	else {
		if (b->failclosed)
			(void)qj_holds_release(b->h.holds, CONN_BASE, FAILCLOSED_HOLD,
					       now_usec(CLOCK_MONOTONIC));
		b->failclosed = false;
		return was;
	}
	if (b->failclosed && strcmp(why, b->failclosed_why) == 0)
		return false;
	/* Root's, in the room the hold table keeps for root: no user's flood can refuse it. */
	r = hold_take(b, CONN_BASE, FAILCLOSED_HOLD, why, 0, getpid());
	if (r < 0) {
		log_error_errno(r, "logind: cannot take the fail-closed hold '%s': %m",
				FAILCLOSED_HOLD);
		return false;
	}
	b->failclosed = true;
	snprintf(b->failclosed_why, sizeof(b->failclosed_why), "%s", why);
	return !was;
}

/* The retry of inhibitors whose hold could not be taken: 1 s, doubling up to 1 min. */
static void schedule_pending(struct qj_logind *b, size_t was)
{
	if (b->n_pending == 0) {
		if (was > 0)
			log_info("logind: every inhibitor that counts is a hold again");
		b->pending_retry_usec = 0;
		b->pending_at_usec = USEC_INFINITY;
		return;
	}
	if (was == 0)
		log_notice("logind: %zu inhibitor(s) that count could not become holds (the "
			   "uid's limits.holds_per_uid, or a full table); the hold '%s' keeps the "
			   "system awake for them",
			   b->n_pending, FAILCLOSED_HOLD);
	if (b->pending_at_usec != USEC_INFINITY)
		return;
	b->pending_retry_usec = b->pending_retry_usec ? b->pending_retry_usec * 2 :
							PENDING_RETRY_INITIAL_USEC;
	if (b->pending_retry_usec > PENDING_RETRY_MAX_USEC)
		b->pending_retry_usec = PENDING_RETRY_MAX_USEC;
	b->pending_at_usec = now_usec(CLOCK_MONOTONIC) + b->pending_retry_usec;
}

bool qj_lgi_apply_all(struct qj_logind *b)
{
	size_t was = b->n_pending;
	bool changed = false;

	b->n_pending = 0;
	for (size_t k = 0; k < b->n; k++) {
		changed |= apply(b, &b->v[k]);
		b->n_pending += b->v[k].pending;
	}
	changed |= qj_lgi_update_failclosed(b);
	schedule_pending(b, was);
	return changed;
}

static void inhibitor_drop(struct qj_logind *b, size_t k)
{
	struct qj_lgi_inhibitor *i = &b->v[k];

	if (i->conn)
		(void)qj_holds_release(b->h.holds, i->conn, i->name, now_usec(CLOCK_MONOTONIC));
	if (i->pidfd >= 0)
		close(i->pidfd);
	free(i->who);
	free(i->why);
	b->v[k] = b->v[--b->n];
}

size_t qj_lgi_drop_all(struct qj_logind *b)
{
	size_t n = b->failclosed;

	b->list_unknown = false;
	b->away_until_usec = USEC_INFINITY;
	while (b->n > 0) {
		n += b->v[b->n - 1].conn != 0;
		inhibitor_drop(b, b->n - 1);
	}
	b->n_pending = 0;
	b->pending_retry_usec = 0;
	b->pending_at_usec = USEC_INFINITY;
	(void)qj_lgi_update_failclosed(b);
	return n;
}

void qj_lgi_unsee_all(struct qj_logind *b)
{
	for (size_t k = 0; k < b->n; k++)
		b->v[k].seen = false;
}

int qj_lgi_see(struct qj_logind *b, const char *who, const char *why, uid_t uid, pid_t pid)
{
	struct qj_lgi_inhibitor *i, *v;
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
	*i = (struct qj_lgi_inhibitor){ .uid = uid, .pid = pid, .pidfd = -EBADF, .seen = true };
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

void qj_lgi_drop_unseen(struct qj_logind *b)
{
	for (size_t k = b->n; k-- > 0;)
		if (!b->v[k].seen) {
			log_info("logind inhibitor '%s' (%s) of pid %d uid %u released",
				 b->v[k].who, b->v[k].why, (int)b->v[k].pid, (unsigned)b->v[k].uid);
			inhibitor_drop(b, k);
		}
}
