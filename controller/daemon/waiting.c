// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Trusted work waiting on the jail (issue 25 finding 6), as status, explain and the kill
 * log show it: jail/waiters.c finds it, this file words it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "daemon-internal.h"
#include "escape.h"
#include "killlog.h"
#include "log.h"
#include "util.h"
#include "waiters.h"
#include "waiting.h"

/* One line for people: "pid 12 (cat) waits for a FUSE request ... served by pid 9 (srv, app x)". */
static void describe(const struct qj_wait *w, char *buf, size_t size)
{
	if (w->kind == QJ_WAIT_LOCK)
		snprintf(buf, size, "waits for a %s held by jailed pid %d (%s) of app %s", w->what,
			 w->holder, w->holder_comm, w->app);
	else
		snprintf(buf, size,
			 "waits for a FUSE request, and jailed pid %d (%s) of app %s serves FUSE: "
			 "it may be the one",
			 w->holder, w->holder_comm, w->app);
}

/*
 * status's listing is made at most once a second: with a jailed FUSE server it reads
 * every thread's wchan on the machine, and status is open to everyone.
 */
#define WAITERS_CACHE_USEC (1 * USEC_PER_SEC)

json_t *qj_waiters_json(struct qj_engine *e, pid_t only)
{
	_cleanup_free_ struct qj_wait *v = NULL;
	json_t *a = json_array();
	size_t n = 0;

	if (!a || !e || qj_engine_waiters(e, only, &v, &n) < 0)
		return a; /* a listing that cannot be made is empty: it is advice, not a decision */
	for (size_t i = 0; i < n; i++) {
		char text[512];

		describe(&v[i], text, sizeof(text));
		/* comms are the processes' own bytes: escaped. */
		(void)json_array_append_new(
			a, json_pack("{s:s,s:i,s:o,s:i,s:o,s:s,s:s,s:o}", "kind",
				     qj_wait_kind_to_string(v[i].kind), "pid", (int)v[i].waiter,
				     "comm", qj_json_string_escaped(v[i].waiter_comm), "holder",
				     (int)v[i].holder, "holder_comm",
				     qj_json_string_escaped(v[i].holder_comm), "app", v[i].app,
				     "what", v[i].what, "text", qj_json_string_escaped(text)));
	}
	return a;
}

json_t *qj_daemon_waiters_json(struct qj_daemon *d, pid_t only)
{
	uint64_t t = qj_daemon_now();

	if (only > 0)
		return qj_waiters_json(d->engine, only);
	if (!d->waiters_cache || t - d->waiters_usec >= WAITERS_CACHE_USEC) {
		json_decref(d->waiters_cache);
		d->waiters_cache = qj_waiters_json(d->engine, 0);
		d->waiters_usec = t;
	}
	return json_incref(d->waiters_cache);
}

void qj_daemon_log_waiters(struct qj_daemon *d)
{
	_cleanup_free_ struct qj_wait *v = NULL;
	size_t n = 0;

	if (!d->engine || qj_engine_waiters(d->engine, 0, &v, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		char text[512];

		describe(&v[i], text, sizeof(text));
		log_notice("Cycle %" PRIu64 ": trusted pid %d (%s) %s", d->cycle.id, v[i].waiter,
			   v[i].waiter_comm, text);
		if (d->killlog) {
			json_t *o = json_pack("{s:I,s:s,s:s,s:i,s:o,s:s,s:i,s:o,s:o}", "cycle",
					      (json_int_t)d->cycle.id, "action", "waiting", "app",
					      v[i].app, "pid", (int)v[i].waiter, "comm",
					      qj_json_string_escaped(v[i].waiter_comm), "kind",
					      qj_wait_kind_to_string(v[i].kind), "holder",
					      (int)v[i].holder, "holder_comm",
					      qj_json_string_escaped(v[i].holder_comm), "reason",
					      qj_json_string_escaped(text));

			if (o)
				(void)qj_killlog_append_json(d->killlog, o);
			json_decref(o);
		}
	}
}
