// SPDX-License-Identifier: LGPL-2.1-or-later
/* qosjaild's event loop: epoll, fd sources, timers and posted work (see loop.h). */
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "loop.h"
#include "util.h"

struct qj_loop {
	int epoll_fd;
	struct qj_loop_work *head, *tail; /* posted, in order */
	bool flushing;
};

int qj_loop_new(struct qj_loop **ret)
{
	struct qj_loop *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epoll_fd < 0) {
		int r = -errno;

		free(l);
		return r;
	}
	*ret = l;
	return 0;
}

struct qj_loop *qj_loop_free(struct qj_loop *l)
{
	if (l)
		(void)close(l->epoll_fd);
	free(l);
	return NULL;
}

int qj_loop_fd(const struct qj_loop *l)
{
	return l->epoll_fd;
}

static int ctl(struct qj_loop *l, int op, struct qj_event_source *s, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = EPOLLIN | events, .data.ptr = s };

	if (fd < 0)
		return -EBADF;
	return epoll_ctl(l->epoll_fd, op, fd, &ev) < 0 ? -errno : 0;
}

int qj_loop_add(struct qj_loop *l, struct qj_event_source *s, int fd, uint32_t events)
{
	return ctl(l, EPOLL_CTL_ADD, s, fd, events);
}

int qj_loop_mod(struct qj_loop *l, struct qj_event_source *s, int fd, uint32_t events)
{
	return ctl(l, EPOLL_CTL_MOD, s, fd, events);
}

void qj_loop_del(struct qj_loop *l, int fd)
{
	if (fd >= 0)
		(void)epoll_ctl(l->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
}

static void timer_dispatch(struct qj_event_source *s, uint32_t events)
{
	struct qj_loop_timer *t = (struct qj_loop_timer *)s;
	uint64_t v;

	(void)events;
	(void)!read(t->fd, &v, sizeof(v));
	t->armed_usec = USEC_INFINITY;
	t->fire(t);
}

int qj_loop_timer_add(struct qj_loop *l, struct qj_loop_timer *t,
		      void (*fire)(struct qj_loop_timer *t))
{
	int r;

	*t = (struct qj_loop_timer){ .source.dispatch = timer_dispatch,
				     .fire = fire,
				     .armed_usec = USEC_INFINITY };
	t->fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (t->fd < 0)
		return -errno;
	r = qj_loop_add(l, &t->source, t->fd, 0);
	if (r < 0) {
		(void)close(t->fd);
		t->fd = -EBADF;
		return r;
	}
	t->loop = l;
	return 0;
}

int qj_loop_timer_arm(struct qj_loop_timer *t, uint64_t usec)
{
	struct itimerspec its = {};

	if (usec != USEC_INFINITY) {
		if (usec == 0)
			usec = 1; /* 0 would disarm */
		its.it_value.tv_sec = (time_t)(usec / USEC_PER_SEC);
		its.it_value.tv_nsec = (long)(usec % USEC_PER_SEC) * 1000;
	}
	if (timerfd_settime(t->fd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		return -errno;
	t->armed_usec = usec;
	return 0;
}

void qj_loop_timer_del(struct qj_loop_timer *t)
{
	if (!t->loop)
		return;
	qj_loop_del(t->loop, t->fd);
	(void)close(t->fd);
	t->fd = -EBADF;
	t->loop = NULL;
	t->armed_usec = USEC_INFINITY;
}

void qj_loop_post(struct qj_loop *l, struct qj_loop_work *w)
{
	if (w->queued)
		return;
	w->queued = true;
	w->next = NULL;
	if (l->tail)
		l->tail->next = w;
	else
		l->head = w;
	l->tail = w;
}

void qj_loop_flush(struct qj_loop *l)
{
	if (l->flushing)
		return;
	l->flushing = true;
	while (l->head) {
		struct qj_loop_work *w = l->head;

		l->head = w->next;
		if (!l->head)
			l->tail = NULL;
		w->queued = false; /* what it posts again runs again */
		w->run(w);
	}
	l->flushing = false;
}

int qj_loop_step(struct qj_loop *l, int timeout_ms)
{
	struct epoll_event evs[32];
	int n;

	qj_loop_flush(l);
	n = epoll_wait(l->epoll_fd, evs, (int)ARRAY_SIZE(evs), timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++) {
		struct qj_event_source *s = evs[i].data.ptr;

		s->dispatch(s, evs[i].events);
		qj_loop_flush(l);
	}
	return n;
}
