/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Cycle events for subscribed clients, and delay holds.  A subscribed connection gets,
 * in order, one message per event: {"event":"quiescing","cycle":N,"delay":B} before the
 * jail is quiesced (B: the cycle waits for delay holds), {"event":"suspending",...}
 * before the backend writes, {"event":"resumed","cycle":N,"result":R} once the jail is
 * restored (R as in status: suspended, aborted, interrupted, failed).  A delay hold is a
 * subscription that the cycle waits for, after "quiescing", until the client answers
 * {"op":"ready","cycle":N} or the policy's max_delay passes.  A subscriber that lets
 * QJ_EVENTS_MAX_UNREAD bytes of messages pile up unread is disconnected with a log line:
 * it never holds up the daemon.  Private to controller/daemon/.
 */
#ifndef QJ_EVENTS_H
#define QJ_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Unread bytes (SIOCOUTQ's accounting: about 1 KiB a small message) before a drop. */
#define QJ_EVENTS_MAX_UNREAD (64 * 1024)

struct qj_cycle;
struct qj_ipc_client;
struct qj_events;
struct qj_loop;
struct qj_loop_work;

/*
 * Events of @cycle (whose delay count it keeps up to date); @settled is posted to @loop
 * when the delay holds may no longer keep a PREPARING cycle waiting.
 */
int qj_events_new(struct qj_cycle *cycle, struct qj_loop *loop, struct qj_loop_work *settled,
		  struct qj_events **ret);
struct qj_events *qj_events_free(struct qj_events *e);
/* The policy's suspend.max_delay (0: no delay holds). */
void qj_events_set_max_delay(struct qj_events *e, uint64_t usec);

/* Subscribes @c (once per connection); @delay makes it a delay hold.  0 or -EEXIST/-ENOMEM. */
int qj_events_subscribe(struct qj_events *e, struct qj_ipc_client *c, bool delay);
/* @c is done with @cycle: 0, -ESTALE (not that cycle, or it no longer waits), -ENOENT. */
int qj_events_ready(struct qj_events *e, struct qj_ipc_client *c, uint64_t cycle);
/* @c is gone. */
void qj_events_forget(struct qj_events *e, struct qj_ipc_client *c);
/*
 * Sends the events the cycle's state calls for since the last call.  @end: also the
 * "resumed" of a cycle that ended (after the restore, not before it).
 */
void qj_events_sync(struct qj_events *e, bool end);
/* The jail kept quiesced after cycle @cycle's dark wake runs again: "restored". */
void qj_events_jail_restored(struct qj_events *e, uint64_t cycle);

size_t qj_events_n_subscribers(const struct qj_events *e);
size_t qj_events_n_delays(const struct qj_events *e);
/* Delay holds the open cycle still waits for. */
size_t qj_events_n_pending(const struct qj_events *e);

#endif
