// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The read-only listings, open to everyone: status, holds, metrics and history (the op
 * table's rows in requests.c point here).  Each is bounded whatever users took.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cycle.h"
#include "daemon-internal.h"
#include "engine.h"
#include "escape.h"
#include "events.h"
#include "holds.h"
#include "ipc.h"
#include "killlog.h"
#include "log.h"
#include "policy.h"
#include "proto.h"
#include "util.h"

static void reply(struct qj_ipc_client *c, json_t *msg, int pass_fd)
{
	qj_daemon_reply(c, msg, pass_fd);
}

/*
 * Entries of a listing (holds in status and holds, names in holds): the oldest
 * LIST_MAX.  A listing costs the same however many holds users took, so it never
 * delays the others' requests (issue 11 finding 6: 65536 holds made each status
 * take 2.5 s).  The totals stay exact and the reply says "truncated".
 */
#define LIST_MAX 128

/*
 * Listing replies (status, holds) must fit in one message: halve the longest
 * of the "holds" and "stats" arrays until they do, and say "truncated".
 * The totals stay exact.
 */
static json_t *fit_reply(json_t *j)
{
	if (json_array_size(json_object_get(j, "holds")) <
		    (size_t)json_integer_value(json_object_get(j, "holds_total")) ||
	    json_array_size(json_object_get(j, "stats")) <
		    (size_t)json_integer_value(json_object_get(j, "stats_total")))
		(void)json_object_set_new(j, "truncated", json_true());
	for (;;) {
		json_t *holds = json_object_get(j, "holds"), *stats = json_object_get(j, "stats");
		json_t *a = json_array_size(stats) > json_array_size(holds) ? stats : holds;
		char *text = NULL;
		size_t n;
		int r;

		r = qj_proto_encode(j, &text, &n);
		free(text);
		if (r != -EMSGSIZE || json_array_size(a) == 0)
			return j;
		for (size_t keep = json_array_size(a) / 2; json_array_size(a) > keep;)
			(void)json_array_remove(a, json_array_size(a) - 1);
		(void)json_object_set_new(j, "truncated", json_true());
	}
}

static json_t *hold_json(const struct qj_hold *h, uint64_t t)
{
	/* comm is the peer's own choice of bytes, not necessarily UTF-8: escaped, never dropped. */
	return json_pack("{s:s,s:s,s:I,s:I,s:o,s:s,s:I,s:I}", "name", h->name, "reason", h->reason,
			 "pid", (json_int_t)h->owner.pid, "uid", (json_int_t)h->owner.uid, "comm",
			 qj_json_string_escaped(h->owner.comm), "app", h->owner.app, "age_usec",
			 (json_int_t)(t - h->start_usec), "timeout_left_usec",
			 h->deadline_usec == USEC_INFINITY ?
				 (json_int_t)-1 :
				 (json_int_t)(h->deadline_usec > t ? h->deadline_usec - t : 0));
}

/*
 * Root's holds first, then the others, each oldest first: one uid's flood of holds taken
 * earlier must not push root's out of the listing (issue 24).  The first pass stops once
 * it has seen every root hold the table counts.
 */
static json_t *holds_array(struct qj_daemon *d, uint64_t t)
{
	size_t n_root = qj_holds_count_uid(d->holds, 0), seen = 0;
	json_t *a = json_array();
	const struct qj_hold *h;

	for (int pass = n_root ? 0 : 1; a && pass < 2; pass++)
		for (size_t i = 0; json_array_size(a) < LIST_MAX && (h = qj_holds_get(d->holds, i));
		     i++) {
			if ((h->owner.uid == 0) != (pass == 0))
				continue;
			if (json_array_append_new(a, hold_json(h, t)) < 0) {
				json_decref(a);
				return NULL;
			}
			if (pass == 0 && ++seen == n_root)
				break;
		}
	return a;
}

void qj_listing_status(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
		       bool *ret_deferred)
{
	struct qj_engine_counts counts = {};
	struct qj_power_stats ps;
	uint64_t t = qj_daemon_now();
	json_t *j;

	qj_power_get_stats(d->power, &ps);
	if (d->engine)
		(void)qj_engine_counts(d->engine, &counts);
	j = json_pack("{s:b,s:s,s:I,s:I,s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:o*}", "ok", 1, "state",
		      qj_cycle_state_to_string(d->cycle.state), "cycle", (json_int_t)d->cycle.id,
		      "state_age_usec", (json_int_t)(t - d->cycle.state_since_usec), "backend",
		      qj_backend_to_string(qj_power_kind(d->power)), "policy",
		      d->policy_path ? d->policy_path : "(built-in defaults)", "suspends",
		      (json_int_t)d->cycle.n_suspends, "aborts", (json_int_t)d->cycle.n_aborts,
		      "failures", (json_int_t)d->cycle.n_failures, "dry_runs",
		      (json_int_t)ps.dry_runs, "wakeup_count_mismatches", (json_int_t)ps.mismatches,
		      "clients", (json_int_t)qj_ipc_n_clients(d->ipc), "holds", holds_array(d, t));
	if (!j) {
		reply(c, NULL, -1);
		return;
	}
	/* suspend.dark_wake: the jail stays quiesced since the last suspend, until a hold. */
	(void)json_object_set_new(j, "kept_quiesced", json_boolean(d->cycle.kept));
	(void)json_object_set_new(
		j, "last",
		json_pack("{s:s,s:s?,s:I}", "result",
			  qj_cycle_result_to_string(d->cycle.last_result), "error",
			  d->cycle.last_error ? strerrorname_np(-d->cycle.last_error) : NULL,
			  "age_usec",
			  (json_int_t)(d->cycle.last_result_usec ? t - d->cycle.last_result_usec :
								   0)));
	(void)json_object_set_new(
		j, "jail",
		json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:s?,s:o,s:I,s:I}", "cgroup",
			  d->policy->cgroup_path, "apps", (json_int_t)counts.apps, "tasks",
			  (json_int_t)counts.tasks, "busy", (json_int_t)counts.busy, "stopped",
			  (json_int_t)counts.stopped, "frozen", (json_int_t)counts.frozen, "killed",
			  (json_int_t)counts.killed, "holding_app",
			  counts.holding_app[0] ? counts.holding_app : NULL, "holding",
			  /* names a jailed process: its own bytes, escaped */
			  counts.holding[0] ? qj_json_string_escaped(counts.holding) : json_null(),
			  "quiesce_ms", (json_int_t)(counts.quiesce_usec / 1000), "bound_ms",
			  (json_int_t)(counts.bound_usec / 1000)));
	/* The backoff after failed cycles (retry.initial doubled up to retry.max; 0: none). */
	(void)json_object_set_new(j, "retry_usec", json_integer((json_int_t)d->cycle.retry_usec));
	(void)json_object_set_new(j, "subscribers",
				  json_integer((json_int_t)qj_events_n_subscribers(d->events)));
	(void)json_object_set_new(j, "delay_holds",
				  json_integer((json_int_t)qj_events_n_delays(d->events)));
	(void)json_object_set_new(j, "holds_total",
				  json_integer((json_int_t)qj_holds_count(d->holds)));
	/* Trusted work that waits on the jail (waiting.c), and cmdline reads stuck. */
	(void)json_object_set_new(j, "waiting_on_jail", qj_daemon_waiters_json(d, 0));
	(void)json_object_set_new(
		j, "stuck_reads",
		json_integer(d->engine ? (json_int_t)qj_engine_stuck_reads(d->engine) : 0));
	if (d->killlog) {
		struct qj_killlog_stats ks;

		/* Records lost to a full disk: the operator must learn the log has a hole. */
		qj_killlog_get_stats(d->killlog, &ks);
		(void)json_object_set_new(
			j, "kill_log",
			json_pack("{s:s,s:I,s:I,s:s?}", "path", qj_killlog_path(d->killlog), "lost",
				  (json_int_t)ks.lost, "unrecorded", (json_int_t)ks.unrecorded,
				  "error", ks.last_error ? strerrorname_np(-ks.last_error) : NULL));
	}
	reply(c, fit_reply(j), -1);
}

void qj_listing_holds(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
		      bool *ret_deferred)
{
	uint64_t t = qj_daemon_now();
	json_t *stats = json_array();
	struct qj_hold_stats s;

	for (size_t i = 0; stats && i < LIST_MAX && qj_holds_stats_at(d->holds, i, t, &s) == 0; i++)
		if (json_array_append_new(
			    stats,
			    json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "name", s.name,
				      "active", (json_int_t)s.active, "active_count",
				      (json_int_t)s.active_count, "event_count",
				      (json_int_t)s.event_count, "expire_count",
				      (json_int_t)s.expire_count, "total_time_usec",
				      (json_int_t)s.total_time_usec, "max_time_usec",
				      (json_int_t)s.max_time_usec, "last_change_usec",
				      (json_int_t)s.last_change_usec, "prevent_suspend_time_usec",
				      (json_int_t)s.prevent_suspend_time_usec)) < 0) {
			json_decref(stats);
			stats = NULL;
		}
	reply(c,
	      stats ? fit_reply(json_pack("{s:b,s:I,s:I,s:I,s:o*,s:o}", "ok", 1, "now_usec",
					  (json_int_t)t, "holds_total",
					  (json_int_t)qj_holds_count(d->holds), "stats_total",
					  (json_int_t)qj_holds_n_stats(d->holds), "holds",
					  holds_array(d, t), "stats", stats)) :
		      NULL,
	      -1);
}

/* The same text as --metrics-file: counters across cycles, for everyone (like status). */
void qj_listing_metrics(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
			bool *ret_deferred)
{
	struct qj_metrics_view view = qj_daemon_metrics_view(d);
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = qj_metrics_text(&view, QJ_METRICS_MAX_TEXT, &text, &len);

	if (r < 0) {
		qj_daemon_reply_error(c, r, "cannot build the metrics: %s", strerror(-r));
		return;
	}
	reply(c, json_pack("{s:b,s:s%}", "ok", 1, "text", text, len), -1);
}

/*
 * A CLOCK_BOOTTIME stamp of the hold table as CLOCK_REALTIME, for people and other hosts.
 * Not from CLOCK_MONOTONIC: it stops while the machine sleeps, and a period converted
 * with today's offset was drawn later by every sleep after it (issue 29).
 */
static json_int_t to_realtime(uint64_t boot, uint64_t now_boot, uint64_t now_real)
{
	return (json_int_t)qj_holds_boot_to_realtime(boot, now_boot, now_real);
}

/*
 * Recent active periods of hold names (the timeline of qosjailctl report): the ones
 * ended (oldest dropped until the reply fits) and the ones running.  Names as holds
 * shows them, to everyone.
 */
void qj_listing_history(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
			bool *ret_deferred)
{
	uint64_t t = qj_daemon_now(), rt = now_usec(CLOCK_REALTIME),
		 bt = qj_holds_boottime(d->holds);
	json_t *periods = json_array(), *active = json_array(), *j;
	struct qj_hold_stats s;

	for (size_t i = 0; periods && qj_holds_history(d->holds, i); i++) {
		const struct qj_hold_interval *h = qj_holds_history(d->holds, i);

		if (json_array_append_new(
			    periods,
			    json_pack("{s:o,s:I,s:I,s:b}", "name", qj_json_string_escaped(h->name),
				      "start_usec", to_realtime(h->start_boot_usec, bt, rt),
				      "end_usec", to_realtime(h->end_boot_usec, bt, rt), "expired",
				      h->expired)) < 0)
			goto oom;
	}
	for (size_t i = 0; active && i < LIST_MAX && qj_holds_stats_at(d->holds, i, t, &s) == 0;
	     i++)
		if (s.active &&
		    json_array_append_new(
			    active, json_pack("{s:o,s:I}", "name", qj_json_string_escaped(s.name),
					      "start_usec",
					      to_realtime(s.active_since_boot_usec, bt, rt))) < 0)
			goto oom;
	j = json_pack("{s:b,s:I,s:o,s:o}", "ok", 1, "now_usec", (json_int_t)rt, "periods", periods,
		      "active", active);
	for (;;) { /* hold names are up to 128 bytes each: keep the newest that fit */
		char *text = NULL;
		size_t n;
		int r = j ? qj_proto_encode(j, &text, &n) : 0;

		free(text);
		if (r != -EMSGSIZE || json_array_size(periods) == 0)
			break;
		(void)json_array_remove(periods, 0);
		(void)json_object_set_new(j, "truncated", json_true());
	}
	reply(c, j, -1);
	return;
oom:
	json_decref(periods);
	json_decref(active);
	reply(c, NULL, -1);
}
