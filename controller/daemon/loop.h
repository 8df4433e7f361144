/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * qosjaild's event loop, a leaf: an epoll set of fd sources, and work posted to run once
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

int qj_loop_new(struct qj_loop **ret);
struct qj_loop *qj_loop_free(struct qj_loop *l);
/* The epoll fd, for a module that registers its own fds (the IPC server). */
int qj_loop_fd(const struct qj_loop *l);

/* Registers @fd (EPOLLIN and @extra) with @s; 0 or -errno (-EBADF for a negative @fd). */
int qj_loop_add(struct qj_loop *l, struct qj_event_source *s, int fd, uint32_t events);
int qj_loop_mod(struct qj_loop *l, struct qj_event_source *s, int fd, uint32_t events);
void qj_loop_del(struct qj_loop *l, int fd);

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
