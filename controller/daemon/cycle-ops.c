// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The requests that act on the suspend cycle: suspend now, subscribe to its events (a
 * delay hold too), and a delay hold's "ready" (the op table's rows in requests.c).
 */
#include <inttypes.h>
#include <jansson.h>
#include <string.h>

#include "cycle.h"
#include "daemon-internal.h"
#include "events.h"
#include "holds.h"
#include "ipc.h"
#include "log.h"
#include "policy.h"
#include "proto.h"

void qj_cycle_op_suspend(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
			 bool *ret_deferred)
{
	int r;

	r = qj_cycle_request_suspend(&d->cycle, qj_daemon_now());
	if (r == -EBUSY) {
		qj_daemon_reply_error(c, r,
				      "%zu hold(s) keep the system awake; see qosjailctl holds",
				      qj_holds_count(d->holds));
		return;
	}
	if (r < 0) {
		qj_daemon_reply_error(c, r,
				      "a suspend cycle is already running (cycle %" PRIu64 ")",
				      d->cycle.id);
		return;
	}
	log_info("Suspend requested by pid %d uid %d", c->pid, c->uid);
	qj_daemon_reply(c, json_pack("{s:b,s:I}", "ok", 1, "cycle", (json_int_t)d->cycle.id), -1);
	qj_daemon_apply(d, (unsigned)r);
}

/*
 * Cycle events on this connection.  Anyone may watch, a jailed app too (that is how it
 * learns the system resumed); a delay hold postpones every suspend, so it takes
 * access.delay, a peer known not to be jailed, and a policy whose max_delay is not 0.
 */
void qj_cycle_op_subscribe(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
			   bool *ret_deferred)
{
	int r;

	/* access.delay and not jailed: the op table's rule for the "delay" form. */
	if (req->delay && d->policy->max_delay_usec == 0) {
		qj_daemon_reply_error(c, -EPERM,
				      "suspend.max_delay of the policy is 0: no delay holds");
		return;
	}
	r = qj_events_subscribe(d->events, c, req->delay);
	if (r < 0) {
		qj_daemon_reply_error(c, r,
				      r == -EEXIST ? "this connection is subscribed already" :
						     "cannot subscribe: %s",
				      strerror(-r));
		return;
	}
	log_debug("Pid %d (%s) subscribed to cycle events%s", c->pid, c->comm,
		  req->delay ? " with a delay hold" : "");
	qj_daemon_reply(c,
			json_pack("{s:b,s:b,s:I}", "ok", 1, "delay", req->delay, "max_delay_usec",
				  (json_int_t)d->policy->max_delay_usec),
			-1);
}

void qj_cycle_op_ready(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
		       bool *ret_deferred)
{
	int r = qj_events_ready(d->events, c, req->cycle);

	if (r == -ENOENT) {
		qj_daemon_reply_error(c, r,
				      "this connection holds no delay hold (subscribe with delay)");
		return;
	}
	if (r < 0) {
		qj_daemon_reply_error(c, r,
				      "cycle %" PRIu64 " does not wait for this delay hold (%s)",
				      req->cycle, "max_delay passed, or another cycle");
		return;
	}
	qj_daemon_reply(c, qj_reply_new_ok(), -1);
	qj_daemon_apply(d, qj_cycle_on_ready(&d->cycle, qj_events_n_pending(d->events),
					     qj_daemon_now()));
}
