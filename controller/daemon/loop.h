/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * qosjaild's event loop, a leaf: an epoll set of fd sources, timers, and work posted to run once
 * the source that posted it has returned.  A module that changes what the cycle should
 * do (a hold released, the last delay hold ready) posts a work item instead of calling
 * the daemon back: the work runs after the current dispatch, never inside another
 * module's call, so nothing is re-entered (docs/decisions.md, "The loop is a leaf").
 * Private to controller/daemon/.
 */
#ifndef QJ_LOOP_H
#define QJ_LOOP_H

#include <stdbool.h>
#include <stdint.h>

/* Anything registered in the loop's epoll set: data.ptr points at one. */
struct qj_event_source {
	void (*dispatch)(struct qj_event_source *s, uint32_t events);
};

/* Work posted to the loop; embedded in its owner (no allocation, posting cannot fail). */
struct qj_loop_work {
	void (*run)(struct qj_loop_work *w);
	struct qj_loop_work *next;
	bool queued; /* posted again before it ran: it runs once */
};

struct qj_loop;

/*
 * A one-shot timer source at an absolute CLOCK_MONOTONIC time (a timerfd in the epoll
 * set), embedded in its owner.  @fire runs from the loop's dispatch once it expired,
 * the timer disarmed by then; the owner arms it again for its next deadline.
 */
struct qj_loop_timer {
	struct qj_event_source source;
	void (*fire)(struct qj_loop_timer *t);
	struct qj_loop *loop; /* NULL until added */
	int fd;
	uint64_t armed_usec; /* USEC_INFINITY: disarmed */
};

int qj_loop_new(struct qj_loop **ret);
struct qj_loop *qj_loop_free(struct qj_loop *l);
/* The epoll fd, for a module that registers its own fds (the IPC server). */
int qj_loop_fd(const struct qj_loop *l);

/* Registers @fd (EPOLLIN and @extra) with @s; 0 or -errno (-EBADF for a negative @fd). */
int qj_loop_add(struct qj_loop *l, struct qj_event_source *s, int fd, uint32_t events);
int qj_loop_mod(struct qj_loop *l, struct qj_event_source *s, int fd, uint32_t events);
void qj_loop_del(struct qj_loop *l, int fd);

/* Registers @t, disarmed, to call @fire when it expires; 0 or -errno. */
int qj_loop_timer_add(struct qj_loop *l, struct qj_loop_timer *t,
		      void (*fire)(struct qj_loop_timer *t));
/*
 * Arms @t for @usec (CLOCK_MONOTONIC, absolute; one already past fires at once), or
 * disarms it for USEC_INFINITY.  0 or -errno (the timer then stays as it was).
 */
int qj_loop_timer_arm(struct qj_loop_timer *t, uint64_t usec);
static inline int qj_loop_timer_disarm(struct qj_loop_timer *t)
{
	return qj_loop_timer_arm(t, UINT64_MAX);
}
/* When @t fires next: USEC_INFINITY when disarmed. */
static inline uint64_t qj_loop_timer_armed(const struct qj_loop_timer *t)
{
	return t->armed_usec;
}
/* Unregisters @t and closes its timerfd; a no-op for one never added. */
void qj_loop_timer_del(struct qj_loop_timer *t);

/* @w runs after the current dispatch (or at the next qj_loop_flush()). */
void qj_loop_post(struct qj_loop *l, struct qj_loop_work *w);
/*
 * Runs the posted work, and what that work posts, until none is left.  A no-op inside
 * posted work: the flush that runs it goes on with what was posted meanwhile.
 */
void qj_loop_flush(struct qj_loop *l);
/*
 * Flushes, waits up to @timeout_ms (-1: forever) and dispatches what is ready, flushing
 * after each source.  Returns the number dispatched, 0 on EINTR, or -errno.
 */
int qj_loop_step(struct qj_loop *l, int timeout_ms);

#endif
