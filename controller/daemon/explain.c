// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The explain request: why a process is or is not jailed, and what the next quiesce
 * would do to it (qosjailctl explain).
 *
 * Issue 25 finding 1: the loop never reads what can wait on the target's locks.  The
 * owner's uid comes from /proc/PID/status (no lock of the target), the access check
 * comes next, before anything else is read for the caller; the cmdline, when the policy
 * needs it to say where the process belongs, is read off the loop thread
 * (jail/procread.h) while the client's further requests wait (its connection is paused).
 * A read that does not come back in time is answered without it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "escape.h"
#include "explain.h"
#include "ipc.h"
#include "ladder.h"
#include "log.h"
#include "policy.h"
#include "proc.h"
#include "reply.h"
#include "util.h"
#include "waiting.h"

/* An explain waiting for the target's cmdline. */
struct qj_explain_pending {
	struct qj_explainer *x;
	struct qj_ipc_client *c; /* valid until on_disconnect: qj_daemon_explain_forget() */
	pid_t pid;
	uint64_t read_id;
	struct qj_explain_pending *next;
};

/* One sentence on why @x's process is or is not jailed; @unread: why its cmdline is not known. */
static void explain_why(const struct qj_engine_explain *x, const char *unread, char *buf,
			size_t size)
{
	const struct qj_app *a = x->policy_app;

	if (x->jailed && !a)
		snprintf(buf, size, "in the jail's group %s, which the policy no longer lists",
			 x->app);
	else if (x->jailed && a->exempt)
		snprintf(buf, size, "jailed in app %s, which is exempt: never escalated", x->app);
	else if (x->jailed && (a->match_exe || a->match_cmdline || a->has_match_uid))
		snprintf(buf, size, "jailed in app %s (placed, or matched by its rules at exec)",
			 x->app);
	else if (x->jailed)
		snprintf(buf, size, "jailed in app %s, placed by a launcher", x->app);
	else if (x->cmdline_unknown)
		snprintf(buf, size,
			 "not jailed yet: its cmdline could not be read (%s); at its next exec "
			 "or event resync it is jailed in app %s, which it may match (fail closed)",
			 unread ? unread : "not read", x->app);
	else if (a && a->trust == QJ_TRUST_TRUSTED)
		snprintf(buf, size, "not jailed: matches app %s, which is trusted", x->app);
	else if (a)
		snprintf(buf, size,
			 "not jailed yet: matches app %s; it is jailed at its next exec or "
			 "event resync",
			 x->app);
	else
		snprintf(buf, size, "not jailed: matches no app of the policy");
}

/* The rungs a busy process of @x's app goes through from the next quiesce on. */
static json_t *explain_ladder(const struct qj_policy *p, const struct qj_engine_explain *x)
{
	json_t *a = json_array();

	for (int r = x->first_rung; a && r >= 0;
	     r = qj_ladder_next_rung(p, x->policy_app, r, x->catches_sigxcpu, x->consents))
		if (json_array_append_new(
			    a, json_pack("{s:s,s:s,s:I}", "name", p->rungs[r].name, "action",
					 qj_action_to_string(p->rungs[r].action), "grace_usec",
					 (json_int_t)p->rungs[r].grace_usec)) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/*
 * A process's comm and executable need not be UTF-8, and json_pack() refuses
 * the whole reply for one such string: escaped (\xNN) in place, never dropped.
 */
static void escape_proc_names(char *comm, size_t size, char **exe)
{
	char raw[256];

	snprintf(raw, sizeof(raw), "%s", comm);
	(void)qj_escape_buf(raw, QJ_ESCAPE_UTF8, comm, size); /* 15 bytes of comm: fits */
	if (*exe) {
		char *e = qj_escape(*exe, QJ_ESCAPE_UTF8);

		free(*exe);
		*exe = e; /* NULL on OOM: "exe" null, as when unreadable */
	}
}

static void explain_reply(const struct qj_explainer *ex, struct qj_ipc_client *c, pid_t pid,
			  const struct qj_engine_explain *x, const char *unread)
{
	const struct qj_policy *p = *ex->policy;
	_cleanup_free_ char *exe = NULL;
	struct qj_proc_stat st;
	char why[384];

	if (qj_proc_stat_read(pid, &st) < 0)
		st.comm[0] = '\0';
	(void)qj_proc_exe(pid, &exe);
	escape_proc_names(st.comm, sizeof(st.comm), &exe);
	explain_why(x, unread, why, sizeof(why));
	qj_daemon_reply(
		c,
		json_pack("{s:b,s:i,s:s,s:s?,s:I,s:b,s:s?,s:s?,s:b,s:s,s:I,s:o,s:{s:b,s:b,s:s?,s:s?,"
			  "s:b,s:b,s:o},s:o}",
			  "ok", 1, "pid", (int)pid, "comm", st.comm, "exe", exe, "uid",
			  (json_int_t)x->uid, "jailed", x->jailed, "app", x->app[0] ? x->app : NULL,
			  "trust", x->policy_app ? qj_trust_to_string(x->policy_app->trust) : NULL,
			  "exempt", x->policy_app && x->policy_app->exempt, "why", why, "strikes",
			  (json_int_t)x->strikes, "ladder", explain_ladder(p, x), "cycle",
			  "quiescing", x->quiescing, "tracked", x->tracked, "activity",
			  x->tracked ? qj_task_activity_to_string(x->activity) : NULL, "rung",
			  x->tracked && x->rung >= 0 ? p->rungs[x->rung].name : NULL,
			  "stopped_by_qosjail", x->stopped_by_us, "frozen", x->frozen, "holding",
			  x->holding[0] ? qj_json_string_escaped(x->holding) : json_null(),
			  "waiting_on_jail", qj_waiters_json(ex->engine, pid)),
		-1);
}

/* Explains from what the engine read now; @unread: why the cmdline is not known (or NULL). */
static void explain_now(struct qj_explainer *ex, struct qj_ipc_client *c, pid_t pid,
			const char *cmdline, const char *unread)
{
	struct qj_engine_explain x;
	char msg[64];
	int r;

	r = qj_engine_explain(ex->engine, pid, cmdline, &x);
	if (r < 0) {
		snprintf(msg, sizeof(msg),
			 r == -ESRCH ? "no process %d" : "cannot inspect process %d", pid);
		qj_daemon_reply_error(c, r, "%s", msg);
		return;
	}
	explain_reply(ex, c, pid, &x, unread);
}

static void unlink_pending(struct qj_explainer *ex, struct qj_explain_pending *p)
{
	for (struct qj_explain_pending **q = &ex->pending; *q; q = &(*q)->next)
		if (*q == p) {
			*q = p->next;
			return;
		}
}

static void on_cmdline(int r, const char *cmdline, void *userdata)
{
	struct qj_explain_pending *p = userdata;
	struct qj_explainer *ex = p->x;

	unlink_pending(ex, p);
	if (r != -ECANCELED) { /* cancelled: the client left, or the daemon exits */
		qj_ipc_pause(p->c, false);
		if (r == -ESRCH)
			qj_daemon_reply_error(p->c, r, "no process %d", p->pid);
		else
			explain_now(ex, p->c, p->pid, r == 0 ? cmdline : NULL,
				    r == -ETIMEDOUT ? "the read is stuck" : strerror(-r));
	}
	free(p);
}

void qj_explainer_request(struct qj_explainer *ex, struct qj_ipc_client *c, pid_t pid)
{
	struct qj_explain_pending *p;
	struct qj_engine_explain x;
	struct qj_proc_status ps;
	char msg[128];
	int r;

	if (!ex->engine) {
		qj_daemon_reply_error(c, -EOPNOTSUPP,
				      "no jail: the daemon runs without its engine");
		return;
	}
	/* The owner first: status takes none of the target's locks. */
	r = qj_proc_status_read(pid, &ps);
	if (r < 0) {
		snprintf(msg, sizeof(msg),
			 r == -ESRCH ? "no process %d" : "cannot inspect process %d", pid);
		qj_daemon_reply_error(c, r == -ENOENT ? -ESRCH : r, "%s", msg);
		return;
	}
	/* What /proc/PID/exe would tell the peer itself: root, the owner, or log readers. */
	if (c->uid != 0 && c->uid != ps.uid &&
	    !qj_principals_allow(&(*ex->policy)->access_logs, c->uid, c->groups, c->n_groups)) {
		log_notice("Refused explain of pid %d to pid %d uid %d (%s)", pid, c->pid, c->uid,
			   c->comm);
		snprintf(msg, sizeof(msg),
			 "uid %d may not explain another user's process: not in access.logs",
			 c->uid);
		qj_daemon_reply_error(c, -EPERM, "%s", msg);
		return;
	}
	r = qj_engine_explain(ex->engine, pid, NULL, &x);
	if (r < 0 || !x.cmdline_unknown) {
		explain_now(ex, c, pid, NULL, NULL);
		return;
	}
	/* The policy needs its cmdline: read off the loop; this client waits for it. */
	p = calloc(1, sizeof(*p));
	if (!p) {
		qj_daemon_reply_error(c, -ENOMEM, "out of memory");
		return;
	}
	*p = (struct qj_explain_pending){ .x = ex, .c = c, .pid = pid };
	r = qj_engine_read_cmdline(ex->engine, pid, ps.uid, on_cmdline, p, &p->read_id);
	if (r < 0) {
		free(p);
		explain_now(ex, c, pid, NULL,
			    r == -EBUSY ? "a read of this user's processes is stuck" :
					  strerror(-r));
		return;
	}
	p->next = ex->pending;
	ex->pending = p;
	qj_ipc_pause(c, true);
}

void qj_explainer_forget(struct qj_explainer *ex, struct qj_ipc_client *c)
{
	for (struct qj_explain_pending *p = ex->pending, *next; p; p = next) {
		next = p->next;
		if (p->c == c)
			qj_engine_cancel_read(ex->engine, p->read_id); /* frees p */
	}
}
