// SPDX-License-Identifier: LGPL-2.1-or-later
/* Cycle events and delay holds (see events.h). */
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cycle.h"
#include "daemon-internal.h"
#include "events.h"
#include "ipc.h"
#include "log.h"
#include "util.h"

struct sub {
	struct qj_ipc_client *c;
	bool delay;
	bool pending; /* the open cycle waits for its "ready" */
};

struct qj_events {
	struct sub *v;
	size_t n;
	size_t n_delays;
	size_t n_pending;
	uint64_t open_cycle; /* "quiescing" sent, "resumed" not yet; 0: none */
	bool sending; /* in send_all(): later events wait in @fifo */
	json_t *fifo;
	bool suspending_sent;
};

int qj_events_new(struct qj_events **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

struct qj_events *qj_events_free(struct qj_events *e)
{
	if (e) {
		free(e->v);
		json_decref(e->fifo);
	}
	free(e);
	return NULL;
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

/* The cycle learns how many delay holds there are; a PREPARING cycle with none left goes on. */
static void settle_delays(struct qj_daemon *d)
{
	qj_cycle_set_delays(&d->cycle, d->events->n_delays, d->policy->max_delay_usec);
	if (d->cycle.state == QJ_CYCLE_PREPARING && d->events->n_pending == 0)
		qj_daemon_apply(d, qj_cycle_on_ready(&d->cycle, 0, qj_daemon_now()));
}

int qj_events_subscribe(struct qj_daemon *d, struct qj_ipc_client *c, bool delay)
{
	struct qj_events *e = d->events;
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
	qj_cycle_set_delays(&d->cycle, e->n_delays, d->policy->max_delay_usec);
	return 0;
}

int qj_events_ready(struct qj_daemon *d, struct qj_ipc_client *c, uint64_t cycle)
{
	struct qj_events *e = d->events;
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

void qj_events_forget(struct qj_daemon *d, struct qj_ipc_client *c)
{
	ssize_t k = find(d->events, c);

	if (k < 0)
		return;
	remove_sub(d->events, (size_t)k);
	if (!d->exiting && !d->events->sending)
		settle_delays(d);
}

/*
 * Sends @msg (consumed) to every subscriber; drops those that do not read.  A drop
 * disconnects at once, and the disconnect can release holds and move the cycle, whose
 * events come here again: they wait in the FIFO until this one reached everyone, so
 * every subscriber sees the events in order.
 */
static void send_all(struct qj_daemon *d, json_t *msg)
{
	struct qj_events *e = d->events;

	if (!msg || (!e->fifo && !(e->fifo = json_array())) ||
	    json_array_append_new(e->fifo, msg) < 0) {
		log_error("Out of memory queueing a cycle event, subscribers miss it");
		return;
	}
	if (e->sending)
		return;
	e->sending = true;
	while (json_array_size(e->fifo) > 0) {
		json_t *m = json_incref(json_array_get(e->fifo, 0));

		(void)json_array_remove(e->fifo, 0);
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
	e->sending = false;
}

static bool cycle_running(const struct qj_cycle *c)
{
	return c->state == QJ_CYCLE_PREPARING || c->state == QJ_CYCLE_QUIESCING ||
	       c->state == QJ_CYCLE_SUSPENDING;
}

void qj_events_sync(struct qj_daemon *d, bool end)
{
	struct qj_events *e = d->events;
	const struct qj_cycle *cy = &d->cycle;
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
				 cy->id, (uint64_t)(d->policy->max_delay_usec / USEC_PER_MSEC),
				 e->n_pending);
		send_all(d, json_pack("{s:s,s:I,s:b}", "event", "quiescing", "cycle",
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
					    (uint64_t)(d->policy->max_delay_usec / USEC_PER_MSEC));
			e->v[k].pending = false;
		}
		e->n_pending = 0;
	}
	if (cy->state == QJ_CYCLE_SUSPENDING && !e->suspending_sent && e->open_cycle) {
		e->suspending_sent = true;
		send_all(d, json_pack("{s:s,s:I}", "event", "suspending", "cycle",
				      (json_int_t)e->open_cycle));
	}
	if (end && !running && e->open_cycle) {
		uint64_t id = e->open_cycle;

		e->open_cycle = 0;
		/* jail: whether it runs again or stays quiesced after a dark wake. */
		send_all(d,
			 json_pack("{s:s,s:I,s:s,s:s}", "event", "resumed", "cycle", (json_int_t)id,
				   "result", qj_cycle_result_to_string(cy->last_result), "jail",
				   cy->kept ? "kept-quiesced" : "restored"));
	}
	settle_delays(d);
}

void qj_events_jail_restored(struct qj_daemon *d, uint64_t cycle)
{
	send_all(d, json_pack("{s:s,s:I}", "event", "restored", "cycle", (json_int_t)cycle));
}
