// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The daemon's side of dark wakes (suspend.dark_wake: keep-quiesced, see cycle.h and
 * docs/decisions.md): keeping the jail after a suspend that returned with no hold, the
 * next cycle taking it over, and its restore when a hold comes.
 */
#include <inttypes.h>

#include "backend.h"
#include "cycle.h"
#include "daemon-internal.h"
#include "engine.h"
#include "events.h"
#include "killlog.h"
#include "log.h"
#include "util.h"

unsigned qj_daemon_dark_keep(struct qj_daemon *d)
{
	unsigned next = 0;
	int r = 0;

	if (d->engine)
		r = qj_engine_keep_quiesced(d->engine, "suspended, kept quiesced");
	if (r < 0) {
		/* Fail open for the jail's apps: restore it as without the key. */
		log_warning_errno(r,
				  "Cycle %" PRIu64 ": cannot keep the jail quiesced, "
				  "restoring it: %m",
				  d->cycle.id);
		next = qj_cycle_on_keep_failed(&d->cycle);
	} else {
		log_info("Cycle %" PRIu64 " ended: suspended; dark wake, the jail stays quiesced "
			 "until a hold",
			 d->cycle.id);
	}
	qj_metrics_cycle_ended(&d->metrics, d->cycle.last_result);
	return next;
}

unsigned qj_daemon_dark_quiesce(struct qj_daemon *d)
{
	uint64_t next = USEC_INFINITY;
	int r;

	d->app_gen++;
	d->quiesce_begin_usec = qj_daemon_now();
	if (d->killlog)
		(void)qj_killlog_cycle_begin(d->killlog, d->cycle.id, now_usec(CLOCK_REALTIME));
	r = qj_power_prepare(d->power);
	if (r < 0) {
		log_warning_errno(r, "Failed to read the wakeup count: %m");
		qj_metrics_backend_error(&d->metrics, r);
		return qj_cycle_on_quiesce(&d->cycle, r, 0, qj_daemon_now());
	}
	r = 1;
	if (d->engine)
		r = qj_engine_quiesce_kept(d->engine, d->cycle.id, qj_daemon_now(), &next);
	if (r < 0)
		log_error_errno(r, "Cycle %" PRIu64 ": failed to take the kept jail over: %m",
				d->cycle.id);
	if (r == 1)
		qj_metrics_quiesced(&d->metrics, qj_daemon_now() - d->quiesce_begin_usec);
	return qj_cycle_on_quiesce(&d->cycle, r, next, qj_daemon_now());
}

/* A hold (or the key turned off) ends the dark wake: the jail runs again. */
void qj_daemon_dark_restore(struct qj_daemon *d)
{
	int r;

	if (d->engine) {
		r = qj_engine_restore(d->engine, "hold after a dark wake");
		if (r < 0)
			log_error_errno(r, "Failed to restore the jail: %m");
	}
	log_info("Cycle %" PRIu64 ": the jail kept since the dark wake is restored", d->cycle.id);
	qj_events_jail_restored(d->events, d->cycle.id);
}
