// SPDX-License-Identifier: LGPL-2.1-or-later
/* Cycle events and delay holds (see events.h). */
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cycle.h"
#include "events.h"
#include "ipc.h"
#include "log.h"
#include "loop.h"
#include "util.h"

struct sub {
	struct qj_ipc_client *c;
	bool delay;
	bool pending; /* the open cycle waits for its "ready" */
};

struct qj_events {
	struct qj_cycle *cycle;
	struct qj_loop *loop;
	struct qj_loop_work *settled; /* posted when the delay holds change */
	uint64_t max_delay_usec;
	struct sub *v;
	size_t n;
	size_t n_delays;
	size_t n_pending;
	uint64_t open_cycle; /* "quiescing" sent, "resumed" not yet; 0: none */
	bool suspending_sent;
};

int qj_events_new(struct qj_cycle *cycle, struct qj_loop *loop, struct qj_loop_work *settled,
		  struct qj_events **ret)
{
	struct qj_events *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->cycle = cycle;
	e->loop = loop;
	e->settled = settled;
	*ret = e;
	return 0;
}

struct qj_events *qj_events_free(struct qj_events *e)
{
	if (e)
		free(e->v);
	free(e);
	return NULL;
}

void qj_events_set_max_delay(struct qj_events *e, uint64_t usec)
{
	e->max_delay_usec = usec;
	qj_cycle_set_delays(e->cycle, e->n_delays, usec);
}

size_t qj_events_n_subscribers(const struct qj_events *e)
{
	return e->n;
}

size_t qj_events_n_delays(const struct qj_events *e)
{
	return e->n_delays;
}

size_t qj_events_n_pending(const struct qj_events *e)
{
	return e->n_pending;
}

static ssize_t find(const struct qj_events *e, const struct qj_ipc_client *c)
{
	for (size_t k = 0; k < e->n; k++)
		if (e->v[k].c == c)
			return (ssize_t)k;
	return -1;
}

static void remove_sub(struct qj_events *e, size_t k)
{
	e->n_delays -= e->v[k].delay;
	e->n_pending -= e->v[k].pending;
	e->v[k] = e->v[--e->n];
}

/*
 * The cycle learns how many delay holds there are; a PREPARING cycle with none left
 * waiting goes on, in the work this posts (not here: the caller may be sending events).
 */
static void settle_delays(struct qj_events *e)
{
	qj_cycle_set_delays(e->cycle, e->n_delays, e->max_delay_usec);
	if (e->cycle->state == QJ_CYCLE_PREPARING && e->n_pending == 0)
		qj_loop_post(e->loop, e->settled);
}

int qj_events_subscribe(struct qj_events *e, struct qj_ipc_client *c, bool delay)
{
	struct sub *v;

	if (find(e, c) >= 0)
		return -EEXIST;
	v = reallocarray(e->v, e->n + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	e->v = v;
	v[e->n++] = (struct sub){ .c = c, .delay = delay };
	e->n_delays += delay;
	/* Counted from the next cycle on: the one preparing now did not wait for it. */
	qj_cycle_set_delays(e->cycle, e->n_delays, e->max_delay_usec);
	return 0;
}

int qj_events_ready(struct qj_events *e, struct qj_ipc_client *c, uint64_t cycle)
{
	ssize_t k = find(e, c);

	if (k < 0 || !e->v[k].delay)
		return -ENOENT;
	if (cycle != e->open_cycle || !e->v[k].pending)
		return -ESTALE;
	e->v[k].pending = false;
	e->n_pending--;
	log_debug("Cycle %" PRIu64 ": delay hold of pid %d (%s) ready, %zu left", cycle, c->pid,
		  c->comm, e->n_pending);
	return 0;
}

void qj_events_forget(struct qj_events *e, struct qj_ipc_client *c)
{
	ssize_t k = find(e, c);

	if (k < 0)
		return;
	remove_sub(e, (size_t)k);
	settle_delays(e);
}

/*
 * Sends @m (consumed) to every subscriber; drops those that do not read.  A drop
 * disconnects at once; what that changes (holds released, delay holds gone) is posted to
 * the loop and moves the cycle after this returns, so every subscriber sees the events in
 * order without a queue here.
 */
static void send_all(struct qj_events *e, json_t *m)
{
	if (!m) {
		log_error("Out of memory making a cycle event, subscribers miss it");
		return;
	}
	for (size_t k = 0; k < e->n;) {
		struct qj_ipc_client *c = e->v[k].c;
		size_t unread = qj_ipc_unread_bytes(c);
		int r = -ENOBUFS;

		if (unread < QJ_EVENTS_MAX_UNREAD)
			r = qj_ipc_send(c, m, -1);
		if (r >= 0) {
			k++;
			continue;
		}
		log_warning("Subscriber pid %d (%s) dropped: %s", c->pid, c->comm,
			    unread >= QJ_EVENTS_MAX_UNREAD ? "it does not read its events" :
							     strerror(-r));
		/* A failed send disconnected it already, and on_disconnect() forgot it. */
		if (k < e->n && e->v[k].c == c)
			remove_sub(e, k);
		qj_ipc_disconnect(c);
	}
	json_decref(m);
}

static bool cycle_running(const struct qj_cycle *c)
{
	return c->state == QJ_CYCLE_PREPARING || c->state == QJ_CYCLE_QUIESCING ||
	       c->state == QJ_CYCLE_SUSPENDING;
}

void qj_events_sync(struct qj_events *e, bool end)
{
	const struct qj_cycle *cy = e->cycle;
	bool running = cycle_running(cy);

	if (running && e->open_cycle != cy->id) {
		bool preparing = cy->state == QJ_CYCLE_PREPARING;

		e->open_cycle = cy->id;
		e->suspending_sent = false;
		for (size_t k = 0; preparing && k < e->n; k++)
			if (e->v[k].delay && !e->v[k].pending) {
				e->v[k].pending = true;
				e->n_pending++;
			}
		if (preparing)
			log_info("Cycle %" PRIu64 ": waiting at most %" PRIu64 " ms for %zu delay "
				 "hold(s)",
				 cy->id, (uint64_t)(e->max_delay_usec / USEC_PER_MSEC),
				 e->n_pending);
		send_all(e, json_pack("{s:s,s:I,s:b}", "event", "quiescing", "cycle",
				      (json_int_t)cy->id, "delay", preparing));
	}
	if (e->n_pending > 0 && cy->state != QJ_CYCLE_PREPARING) {
		for (size_t k = 0; k < e->n; k++) {
			if (!e->v[k].pending)
				continue;
			if (running)
				log_warning("Cycle %" PRIu64
					    ": delay hold of pid %d (%s) not ready "
					    "within max_delay (%" PRIu64 " ms): not waited for",
					    cy->id, e->v[k].c->pid, e->v[k].c->comm,
					    (uint64_t)(e->max_delay_usec / USEC_PER_MSEC));
			e->v[k].pending = false;
		}
		e->n_pending = 0;
	}
	if (cy->state == QJ_CYCLE_SUSPENDING && !e->suspending_sent && e->open_cycle) {
		e->suspending_sent = true;
		send_all(e, json_pack("{s:s,s:I}", "event", "suspending", "cycle",
				      (json_int_t)e->open_cycle));
	}
	if (end && !running && e->open_cycle) {
		uint64_t id = e->open_cycle;

		e->open_cycle = 0;
		/* jail: whether it runs again or stays quiesced after a dark wake. */
		send_all(e,
			 json_pack("{s:s,s:I,s:s,s:s}", "event", "resumed", "cycle", (json_int_t)id,
				   "result", qj_cycle_result_to_string(cy->last_result), "jail",
				   cy->kept ? "kept-quiesced" : "restored"));
	}
	settle_delays(e);
}

void qj_events_jail_restored(struct qj_events *e, uint64_t cycle)
{
	send_all(e, json_pack("{s:s,s:I}", "event", "restored", "cycle", (json_int_t)cycle));
}
