// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Escalation decisions.  A busy task climbs the policy's ladder one rung per
 * grace period; a stopped, frozen, idle or gone task is done; a task someone
 * else SIGCONTed after we stopped it climbs at once (its grace was spent).
 */
#include <errno.h>

#include "ladder.h"
#include "util.h"

static int last_rung(const struct qj_policy *p, const struct qj_app *a)
{
	int last = (int)p->n_rungs - 1;

	if (a && a->max_rung >= 0 && a->max_rung < last)
		return a->max_rung;
	return last;
}

/*
 * A notification nobody listens to is a wasted grace period.  And catching
 * SIGXCPU is not consent: it is the CPU-limit signal, and programs (GNU make,
 * Chromium) catch it to clean up and die.  Only a task that catches it and
 * consents (its app's policy key notify, or the process itself through
 * libqosjail) gets it.
 */
static bool listens(const struct qj_app *a, bool catches_sigxcpu, bool consents)
{
	return catches_sigxcpu && ((a && a->notify) || consents);
}

static bool rung_applies(const struct qj_policy *p, const struct qj_app *a, int i, bool listening)
{
	return !qj_action_info(p->rungs[i].action)->needs_handler || listening;
}

static int search_from(const struct qj_policy *p, const struct qj_app *a, int from, bool listening)
{
	int last = last_rung(p, a);

	for (int i = from < 0 ? 0 : from; i <= last; i++)
		if (rung_applies(p, a, i, listening))
			return i;
	return -1;
}

int qj_ladder_first_rung(const struct qj_policy *p, const struct qj_app *a, unsigned strikes,
			 bool catches_sigxcpu, bool consents)
{
	int start = a ? a->start_rung : 0;

	if (p->max_strikes > 0 && strikes >= p->max_strikes && p->strike_rung > start)
		start = p->strike_rung;
	return search_from(p, a, start, listens(a, catches_sigxcpu, consents));
}

int qj_ladder_next_rung(const struct qj_policy *p, const struct qj_app *a, int rung,
			bool catches_sigxcpu, bool consents)
{
	return search_from(p, a, rung + 1, listens(a, catches_sigxcpu, consents));
}

bool qj_task_activity_is_blocked(enum qj_task_activity a)
{
	return a == QJ_TASK_IDLE || a == QJ_TASK_STOPPED || a == QJ_TASK_FROZEN ||
	       a == QJ_TASK_GONE;
}

static void set(struct qj_ladder_decision *ret, enum qj_ladder_verdict v, int rung, uint64_t next)
{
	ret->verdict = v;
	ret->rung = rung;
	ret->next_usec = next;
}

int qj_ladder_decide(const struct qj_policy *p, const struct qj_app *a,
		     const struct qj_ladder_task *t, uint64_t now_usec,
		     struct qj_ladder_decision *ret)
{
	uint64_t deadline;
	int r;

	if (t->rung >= (int)p->n_rungs || t->rung < -1 || t->activity < 0 ||
	    t->activity >= _QJ_TASK_ACTIVITY_MAX)
		return -EINVAL;

	if (qj_task_activity_is_blocked(t->activity)) {
		set(ret, QJ_LADDER_DONE, -1, USEC_INFINITY);
		return 0;
	}
	if (a && a->exempt) {
		set(ret, QJ_LADDER_EXEMPT, -1, USEC_INFINITY);
		return 0;
	}

	switch (t->activity) {
	case QJ_TASK_UNKNOWN:
		/*
		 * The engine adds the end of the sample window.  A grace that
		 * ended before the window did changes nothing until a
		 * measurement comes: a deadline in the past would have the
		 * engine look again at once, in a loop, until the window ends.
		 */
		deadline = t->rung >= 0 ? t->applied_usec + p->rungs[t->rung].grace_usec :
					  USEC_INFINITY;
		set(ret, QJ_LADDER_WAIT, -1, deadline > now_usec ? deadline : USEC_INFINITY);
		return 0;
	case QJ_TASK_CONTINUED:
		r = qj_ladder_next_rung(p, a, t->rung, t->catches_sigxcpu, t->consents);
		break;
	case QJ_TASK_BUSY:
		if (t->rung < 0) {
			r = qj_ladder_first_rung(p, a, t->strikes, t->catches_sigxcpu, t->consents);
			break;
		}
		deadline = t->applied_usec + p->rungs[t->rung].grace_usec;
		if (now_usec < deadline) {
			set(ret, QJ_LADDER_WAIT, -1, deadline);
			return 0;
		}
		r = qj_ladder_next_rung(p, a, t->rung, t->catches_sigxcpu, t->consents);
		break;
	default:
		return -EINVAL;
	}

	if (r < 0)
		set(ret, QJ_LADDER_EXHAUSTED, -1, USEC_INFINITY);
	else
		set(ret, QJ_LADDER_APPLY, r, USEC_INFINITY);
	return 0;
}

const char *qj_task_activity_to_string(enum qj_task_activity a)
{
	static const char *const names[_QJ_TASK_ACTIVITY_MAX] = {
		[QJ_TASK_UNKNOWN] = "unknown", [QJ_TASK_IDLE] = "idle",
		[QJ_TASK_BUSY] = "busy",       [QJ_TASK_STOPPED] = "stopped",
		[QJ_TASK_FROZEN] = "frozen",   [QJ_TASK_CONTINUED] = "continued-by-other",
		[QJ_TASK_GONE] = "gone",
	};

	return a >= 0 && a < _QJ_TASK_ACTIVITY_MAX ? names[a] : NULL;
}

const char *qj_ladder_verdict_to_string(enum qj_ladder_verdict v)
{
	static const char *const names[_QJ_LADDER_VERDICT_MAX] = {
		[QJ_LADDER_DONE] = "done",	     [QJ_LADDER_WAIT] = "wait",
		[QJ_LADDER_APPLY] = "apply",	     [QJ_LADDER_EXEMPT] = "exempt",
		[QJ_LADDER_EXHAUSTED] = "exhausted",
	};

	return v >= 0 && v < _QJ_LADDER_VERDICT_MAX ? names[v] : NULL;
}
