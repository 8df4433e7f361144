// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Off-thread /proc/PID/cmdline reads (see procread.h).
 *
 * One worker takes the queue; the loop abandons it when its read outlives the timeout
 * and starts another.  What the workers and the loop share lives in struct shared,
 * reference counted: an abandoned worker may outlive qj_procread_free() (it cannot be
 * interrupted: the read waits killably, and only the process's exit kills it), and it
 * frees its job and drops its reference when the read returns.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "procfs.h"
#include "procread.h"
#include "util.h"

#define WORKER_STACK (256 * 1024)

struct job {
	uint64_t id;
	int fd; /* /proc/PID/cmdline, opened on the loop */
	uid_t uid;
	size_t max_stuck_uid; /* refused when that many reads of @uid are stuck */
	qj_procread_done_fn done; /* NULL once answered another way (timeout, cancel) */
	void *userdata;
	int r;
	char *text;
	struct job *next;
};

struct worker {
	struct shared *s;
	struct job *job; /* being read; under lock */
	uint64_t start_usec;
	bool abandoned; /* its job is no longer ours: exit once the read returns */
	bool stuck; /* on s->stuck: abandoned in a read */
	uid_t uid; /* of the process it is stuck on */
	struct worker *next;
};

struct shared {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned refs;
	bool stopping;
	int event_fd; /* written by workers while !stopping */
	struct job *queue, **queue_tail;
	size_t n_queue;
	struct job *done, **done_tail;
	struct worker *active; /* the worker taking the queue, NULL when none */
	struct worker *stuck;
	size_t n_stuck;
};

struct qj_procread {
	struct shared *s;
	int epoll_fd, timer_fd;
	uint64_t timeout_usec;
	uint64_t next_id;
	bool timer_armed;
};

int qj_procread_cmdline_fd(int fd, char **ret)
{
	char buf[4096];
	ssize_t n;

	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		return errno == ESRCH || errno == ENOENT ? -ESRCH : negative_errno();
	while (n > 0 && buf[n - 1] == 0)
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == 0)
			buf[i] = ' ';
	buf[n] = 0;
	*ret = strdup(buf);
	return *ret ? 0 : -ENOMEM;
}

static void job_free(struct job *j)
{
	if (!j)
		return;
	if (j->fd >= 0)
		close(j->fd);
	free(j->text);
	free(j);
}

static void shared_unref(struct shared *s)
{
	bool last;

	pthread_mutex_lock(&s->lock);
	last = --s->refs == 0;
	pthread_mutex_unlock(&s->lock);
	if (!last)
		return;
	while (s->queue) {
		struct job *j = s->queue;

		s->queue = j->next;
		job_free(j);
	}
	while (s->done) {
		struct job *j = s->done;

		s->done = j->next;
		job_free(j);
	}
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}

/* Under lock. */
static size_t stuck_on_uid(const struct shared *s, uid_t uid)
{
	size_t n = 0;

	for (const struct worker *w = s->stuck; w; w = w->next)
		n += w->uid == uid;
	return n;
}

/* Under lock: @j answered (its r and text set), for the loop to call back. */
static void post_done(struct shared *s, struct job *j)
{
	uint64_t one = 1;

	j->next = NULL;
	*s->done_tail = j;
	s->done_tail = &j->next;
	if (!s->stopping)
		(void)!write(s->event_fd, &one, sizeof(one));
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct shared *s = w->s;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct job *j;
		char *text = NULL;
		int r;

		while (!w->abandoned && !s->stopping && !s->queue)
			pthread_cond_wait(&s->cond, &s->lock);
		if (w->abandoned || s->stopping)
			break;
		j = s->queue;
		s->queue = j->next;
		if (!s->queue)
			s->queue_tail = &s->queue;
		s->n_queue--;
		/* That uid's processes already hold their share of stuck readers: not another. */
		if (stuck_on_uid(s, j->uid) >= j->max_stuck_uid) {
			j->r = -EBUSY;
			post_done(s, j);
			continue;
		}
		w->job = j;
		w->start_usec = now_usec(CLOCK_MONOTONIC);
		pthread_mutex_unlock(&s->lock);
		r = qj_procread_cmdline_fd(j->fd, &text);
		pthread_mutex_lock(&s->lock);
		w->job = NULL;
		if (w->abandoned) { /* answered -ETIMEDOUT meanwhile */
			free(text);
			job_free(j);
			break;
		}
		j->r = r;
		j->text = text;
		post_done(s, j);
	}
	if (w->stuck) {
		for (struct worker **p = &s->stuck; *p; p = &(*p)->next)
			if (*p == w) {
				*p = w->next;
				break;
			}
		s->n_stuck--;
	} else if (s->active == w) {
		s->active = NULL;
	}
	pthread_mutex_unlock(&s->lock);
	free(w);
	shared_unref(s);
	return NULL;
}

/* Under lock: a worker for the queue; detached, no signals. */
static int start_worker(struct shared *s)
{
	struct worker *w = calloc(1, sizeof(*w));
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t th;
	int r;

	if (!w)
		return -ENOMEM;
	w->s = s;
	(void)pthread_attr_init(&attr);
	(void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	(void)pthread_attr_setstacksize(&attr, WORKER_STACK);
	sigfillset(&all);
	(void)pthread_sigmask(SIG_SETMASK, &all, &old);
	s->refs++;
	r = -pthread_create(&th, &attr, worker_main, w);
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	(void)pthread_attr_destroy(&attr);
	if (r < 0) {
		s->refs--;
		free(w);
		return r;
	}
	s->active = w;
	return 0;
}

int qj_procread_new(uint64_t timeout_usec, struct qj_procread **ret)
{
	struct qj_procread *pr = calloc(1, sizeof(*pr));
	struct shared *s = calloc(1, sizeof(*s));
	int r = -ENOMEM;

	if (!pr || !s) {
		free(pr);
		free(s);
		return -ENOMEM;
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->refs = 1;
	s->queue_tail = &s->queue;
	s->done_tail = &s->done;
	pr->s = s;
	pr->timeout_usec = timeout_usec;
	s->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	pr->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	pr->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (s->event_fd < 0 || pr->timer_fd < 0 || pr->epoll_fd < 0)
		r = -EMFILE;
	else
		r = 0;
	for (int *fd = (int[]){ s->event_fd, pr->timer_fd }, *end = fd + 2; r == 0 && fd < end;
	     fd++)
		if (epoll_ctl(pr->epoll_fd, EPOLL_CTL_ADD, *fd,
			      &(struct epoll_event){ .events = EPOLLIN }) < 0)
			r = negative_errno();
	if (r < 0) {
		for (int *fd = (int[]){ s->event_fd, pr->timer_fd, pr->epoll_fd }, *end = fd + 3;
		     fd < end; fd++)
			if (*fd >= 0)
				close(*fd);
		shared_unref(s);
		free(pr);
		return r;
	}
	*ret = pr;
	return 0;
}

int qj_procread_fd(const struct qj_procread *pr)
{
	return pr ? pr->epoll_fd : -EBADF;
}

size_t qj_procread_n_stuck(const struct qj_procread *pr)
{
	size_t n;

	if (!pr)
		return 0;
	pthread_mutex_lock(&pr->s->lock);
	n = pr->s->n_stuck;
	pthread_mutex_unlock(&pr->s->lock);
	return n;
}

size_t qj_procread_n_reading(const struct qj_procread *pr)
{
	size_t n;

	if (!pr)
		return 0;
	pthread_mutex_lock(&pr->s->lock);
	n = pr->s->n_stuck + (pr->s->active && pr->s->active->job);
	pthread_mutex_unlock(&pr->s->lock);
	return n;
}

static void arm(struct qj_procread *pr, uint64_t at)
{
	struct itimerspec its = {};

	if (at != USEC_INFINITY) {
		at = at ?: 1;
		its.it_value.tv_sec = (time_t)(at / USEC_PER_SEC);
		its.it_value.tv_nsec = (long)(at % USEC_PER_SEC) * 1000;
	}
	if (at == USEC_INFINITY && !pr->timer_armed)
		return;
	(void)timerfd_settime(pr->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
	pr->timer_armed = at != USEC_INFINITY;
}

int qj_procread_submit(struct qj_procread *pr, pid_t pid, uid_t uid, unsigned flags,
		       qj_procread_done_fn done, void *userdata, uint64_t *ret_id)
{
	struct shared *s = pr->s;
	size_t per_uid = flags & QJ_PROCREAD_SPARE ? 1 : QJ_PROCREAD_MAX_STUCK_PER_UID;
	size_t all = flags & QJ_PROCREAD_SPARE ? QJ_PROCREAD_MAX_STUCK / 2 : QJ_PROCREAD_MAX_STUCK;
	char path[QJ_PROCFS_PATH_MAX];
	struct job *j;
	int r = 0;

	pthread_mutex_lock(&s->lock);
	if (s->n_queue >= QJ_PROCREAD_MAX_QUEUE)
		r = -ENOSPC;
	else if (s->n_stuck >= all || stuck_on_uid(s, uid) >= per_uid)
		r = -EBUSY;
	pthread_mutex_unlock(&s->lock);
	if (r < 0)
		return r;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	qj_procfs_path(path, sizeof(path), "%d/cmdline", pid);
	/* open() takes no mm lock, and binds the read to this process (not a reused pid). */
	j->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (j->fd < 0) {
		r = errno == ENOENT ? -ESRCH : negative_errno();
		free(j);
		return r;
	}
	j->id = ++pr->next_id;
	j->uid = uid;
	j->max_stuck_uid = per_uid;
	j->done = done;
	j->userdata = userdata;
	pthread_mutex_lock(&s->lock);
	if (!s->active)
		r = start_worker(s);
	if (r == 0) {
		*s->queue_tail = j;
		s->queue_tail = &j->next;
		s->n_queue++;
		pthread_cond_broadcast(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
	if (r < 0) {
		job_free(j);
		return r;
	}
	if (!pr->timer_armed)
		arm(pr, now_usec(CLOCK_MONOTONIC) + pr->timeout_usec);
	if (ret_id)
		*ret_id = j->id;
	return 0;
}

/* Under lock: moves the jobs to answer to @out (done ones, the timed out, the refused). */
static void collect(struct qj_procread *pr, uint64_t now, struct job **out)
{
	struct shared *s = pr->s;
	struct worker *w = s->active;

	*out = s->done;
	s->done = NULL;
	s->done_tail = &s->done;
	if (w && w->job && now >= w->start_usec + pr->timeout_usec) {
		struct job *j = calloc(1, sizeof(*j));

		/* The worker keeps the job (and its fd) until the read returns. */
		if (j) {
			*j = (struct job){ .fd = -1,
					   .done = w->job->done,
					   .userdata = w->job->userdata,
					   .r = -ETIMEDOUT };
			w->job->done = NULL;
			w->abandoned = w->stuck = true;
			w->uid = w->job->uid;
			w->next = s->stuck;
			s->stuck = w;
			s->n_stuck++;
			s->active = NULL;
			j->next = *out;
			*out = j;
		}
	}
	if (s->active || !s->queue)
		return;
	if (s->n_stuck < QJ_PROCREAD_MAX_STUCK && start_worker(s) == 0)
		return;
	/* No worker may start: whatever is queued fails now, not after another timeout. */
	while (s->queue) {
		struct job *j = s->queue;

		s->queue = j->next;
		j->r = -EBUSY;
		j->next = *out;
		*out = j;
	}
	s->queue_tail = &s->queue;
	s->n_queue = 0;
}

/* Under lock: when the loop must look again (the running read's deadline). */
static uint64_t next_deadline(struct qj_procread *pr, uint64_t now)
{
	struct worker *w = pr->s->active;

	if (w && w->job)
		return w->start_usec + pr->timeout_usec;
	if (pr->s->queue)
		return now + pr->timeout_usec; /* not started yet: look when it must have */
	return USEC_INFINITY;
}

int qj_procread_dispatch(struct qj_procread *pr)
{
	uint64_t now = now_usec(CLOCK_MONOTONIC), v, next;
	struct job *out = NULL;
	int n = 0;

	(void)!read(pr->s->event_fd, &v, sizeof(v));
	(void)!read(pr->timer_fd, &v, sizeof(v));
	pr->timer_armed = false;
	pthread_mutex_lock(&pr->s->lock);
	collect(pr, now, &out);
	next = next_deadline(pr, now);
	pthread_mutex_unlock(&pr->s->lock);
	arm(pr, next);
	while (out) {
		struct job *j = out;

		out = j->next;
		if (j->done) {
			j->done(j->r, j->r == 0 ? j->text : NULL, j->userdata);
			n++;
		}
		job_free(j);
	}
	return n;
}

/* Under lock: unlinks job @id from the list at @head; NULL when not there. */
static struct job *unlink_job(struct job **head, struct job ***tail, uint64_t id)
{
	for (struct job **p = head; *p; p = &(*p)->next) {
		struct job *j = *p;

		if (j->id != id)
			continue;
		*p = j->next;
		if (!*p)
			*tail = p;
		return j;
	}
	return NULL;
}

void qj_procread_cancel(struct qj_procread *pr, uint64_t id)
{
	struct shared *s = pr->s;
	qj_procread_done_fn done = NULL;
	void *userdata = NULL;
	struct job *j;

	pthread_mutex_lock(&s->lock);
	j = unlink_job(&s->queue, &s->queue_tail, id);
	if (j)
		s->n_queue--;
	else
		j = unlink_job(&s->done, &s->done_tail, id);
	if (j) {
		done = j->done;
		userdata = j->userdata;
		job_free(j);
	} else if (s->active && s->active->job && s->active->job->id == id) {
		done = s->active->job->done;
		userdata = s->active->job->userdata;
		s->active->job->done = NULL; /* its answer is dropped */
	}
	pthread_mutex_unlock(&s->lock);
	if (done)
		done(-ECANCELED, NULL, userdata);
}

struct qj_procread *qj_procread_free(struct qj_procread *pr)
{
	struct shared *s;
	struct job *out = NULL;

	if (!pr)
		return NULL;
	s = pr->s;
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	/* Every job still waiting for an answer gets -ECANCELED. */
	while (s->queue || s->done) {
		struct job **head = s->queue ? &s->queue : &s->done;
		struct job *j = *head;

		*head = j->next;
		j->next = out;
		out = j;
	}
	s->queue_tail = &s->queue;
	s->done_tail = &s->done;
	s->n_queue = 0;
	if (s->active) {
		if (s->active->job) {
			struct job *j = calloc(1, sizeof(*j));

			if (j) {
				*j = (struct job){ .fd = -1,
						   .done = s->active->job->done,
						   .userdata = s->active->job->userdata };
				j->next = out;
				out = j;
			}
			s->active->job->done = NULL;
		}
		s->active->abandoned = true;
	}
	pthread_cond_broadcast(&s->cond);
	close(s->event_fd); /* workers write it only while !stopping */
	pthread_mutex_unlock(&s->lock);
	while (out) {
		struct job *j = out;

		out = j->next;
		if (j->done)
			j->done(-ECANCELED, NULL, j->userdata);
		job_free(j);
	}
	close(pr->timer_fd);
	close(pr->epoll_fd);
	shared_unref(s);
	free(pr);
	return NULL;
}
