// SPDX-License-Identifier: LGPL-2.1-or-later
/* Power backends and the worker thread that performs the blocking write (see backend.h). */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "log.h"
#include "util.h"

struct qj_power {
	/* Configuration; written by the main thread only while no job runs. */
	enum qj_backend kind;
	char state_path[4096];
	char count_path[4096];
	char wakeup_state[16];
	uint64_t dry_run_usec;

	int notify_fd;
	pthread_t worker;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool job; /* guarded by lock: a job is queued or running */
	bool quit; /* guarded by lock */
	bool done; /* guarded by lock: result is ready */
	int result; /* guarded by lock */
	atomic_bool cancel; /* the running job must return -EINTR */

	unsigned prepared_count;
	bool prepared;
	struct qj_power_stats stats; /* written by the worker under lock */
};

static void on_sigusr1(int sig)
{
	/* Nothing: its only purpose is to make the worker's blocking syscall return EINTR. */
	(void)sig;
}

/*
 * One read(2): sysfs hands out a whole attribute in the first read (so does
 * the tests' fake, tests/support/fake-sysfs.c).
 */
static int read_text(const char *path, char *buf, size_t size)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t k;

	if (fd < 0)
		return -errno;
	k = read(fd, buf, size - 1); /* EINTR in the worker means "interrupted": no retry */
	if (k < 0)
		return -errno;
	buf[k] = '\0';
	return 0;
}

static int write_text(const char *path, const char *text)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t k;

	if (fd < 0)
		return -errno;
	k = write(fd, text, strlen(text));
	if (k < 0)
		return -errno;
	return (size_t)k == strlen(text) ? 0 : -EIO;
}

static int read_count(const char *path, unsigned *ret)
{
	char buf[64], *end;
	unsigned long v;
	int r;

	r = read_text(path, buf, sizeof(buf));
	if (r < 0)
		return r;
	errno = 0;
	v = strtoul(buf, &end, 10);
	if (errno || end == buf || v > UINT32_MAX)
		return -EBADMSG;
	*ret = (unsigned)v;
	return 0;
}

static bool state_lists(const char *path, const char *word)
{
	char buf[256];

	if (read_text(path, buf, sizeof(buf)) < 0)
		return false;
	for (char *save = NULL, *t = strtok_r(buf, " \n", &save); t;
	     t = strtok_r(NULL, " \n", &save))
		if (strcmp(t, word) == 0)
			return true;
	return false;
}

int qj_power_configure(struct qj_power *b, const struct qj_policy *p)
{
	const char *root = p->sysfs_root ? p->sysfs_root : "/sys";
	enum qj_backend kind = p->backend;

	if ((size_t)snprintf(b->state_path, sizeof(b->state_path), "%s/power/state", root) >=
		    sizeof(b->state_path) ||
	    (size_t)snprintf(b->count_path, sizeof(b->count_path), "%s/power/wakeup_count", root) >=
		    sizeof(b->count_path))
		return -ENAMETOOLONG;
	if (kind == QJ_BACKEND_AUTO)
		kind = state_lists(b->state_path, "qos") ? QJ_BACKEND_QOS : QJ_BACKEND_WAKEUP_COUNT;
	b->kind = kind;
	snprintf(b->wakeup_state, sizeof(b->wakeup_state), "%s",
		 p->wakeup_state ? p->wakeup_state : "mem");
	b->dry_run_usec = p->dry_run_length_usec;
	b->prepared = false;
	return 0;
}

/* The job, in the worker thread.  Checks cancel before each blocking step. */
static int run_job(struct qj_power *b)
{
	char text[32];
	unsigned now_count;
	int r;

	if (atomic_load(&b->cancel))
		return -EINTR;
	switch (b->kind) {
	case QJ_BACKEND_QOS:
		return write_text(b->state_path, "qos");
	case QJ_BACKEND_MEM:
		return write_text(b->state_path, "mem");
	case QJ_BACKEND_FREEZE:
		return write_text(b->state_path, "freeze");
	case QJ_BACKEND_WAKEUP_COUNT:
		if (!b->prepared)
			return -ESTALE;
		/* Cheap userspace check first; the kernel checks again on the write-back. */
		r = read_count(b->count_path, &now_count);
		if (r < 0)
			return r;
		if (now_count != b->prepared_count)
			return -ESTALE;
		if (atomic_load(&b->cancel))
			return -EINTR;
		snprintf(text, sizeof(text), "%u", b->prepared_count);
		r = write_text(b->count_path, text);
		if (r == -EINVAL)
			return -ESTALE; /* the kernel saw wakeup events since our read */
		if (r < 0)
			return r;
		if (atomic_load(&b->cancel))
			return -EINTR;
		return write_text(b->state_path, b->wakeup_state);
	case QJ_BACKEND_DRY_RUN: {
		struct timespec ts = { .tv_sec = (time_t)(b->dry_run_usec / USEC_PER_SEC),
				       .tv_nsec = (long)(b->dry_run_usec % USEC_PER_SEC) * 1000 };

		r = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
		return -r;
	}
	default:
		return -EOPNOTSUPP;
	}
}

static void *worker_main(void *arg)
{
	struct qj_power *b = arg;
	sigset_t ss;

	sigemptyset(&ss);
	sigaddset(&ss, SIGUSR1);
	(void)pthread_sigmask(SIG_UNBLOCK, &ss, NULL);

	pthread_mutex_lock(&b->lock);
	for (;;) {
		uint64_t one = 1;
		int r;

		while (!b->job && !b->quit)
			pthread_cond_wait(&b->cond, &b->lock);
		if (b->quit)
			break;
		b->stats.attempts++;
		pthread_mutex_unlock(&b->lock);

		r = run_job(b);

		pthread_mutex_lock(&b->lock);
		if (r == -ESTALE)
			b->stats.mismatches++;
		if (r == 0 && b->kind == QJ_BACKEND_DRY_RUN) {
			b->stats.dry_runs++;
			b->stats.dry_run_usec += b->dry_run_usec;
		}
		b->result = r;
		b->done = true;
		b->job = false;
		(void)!write(b->notify_fd, &one, sizeof(one));
	}
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

int qj_power_new(const struct qj_policy *p, int notify_fd, struct qj_power **ret)
{
	struct sigaction sa = { .sa_handler = on_sigusr1 }; /* no SA_RESTART: EINTR wanted */
	struct qj_power *b;
	int r;

	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->notify_fd = notify_fd;
	r = qj_power_configure(b, p);
	if (r < 0) {
		free(b);
		return r;
	}
	if (sigaction(SIGUSR1, &sa, NULL) < 0) {
		free(b);
		return -errno;
	}
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	r = pthread_create(&b->worker, NULL, worker_main, b);
	if (r != 0) {
		pthread_mutex_destroy(&b->lock);
		pthread_cond_destroy(&b->cond);
		free(b);
		return -r;
	}
	*ret = b;
	return 0;
}

struct qj_power *qj_power_free(struct qj_power *b)
{
	if (!b)
		return NULL;
	pthread_mutex_lock(&b->lock);
	b->quit = true;
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->lock);
	/* The worker may sit in a blocking write: interrupt until it is gone. */
	for (;;) {
		struct timespec ts;

		qj_power_interrupt(b);
		(void)clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 20 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if (pthread_timedjoin_np(b->worker, NULL, &ts) == 0)
			break;
	}
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->cond);
	free(b);
	return NULL;
}

enum qj_backend qj_power_kind(const struct qj_power *b)
{
	return b->kind;
}

const char *qj_power_path(const struct qj_power *b)
{
	return b->state_path;
}

int qj_power_prepare(struct qj_power *b)
{
	int r;

	b->prepared = false;
	if (b->kind != QJ_BACKEND_WAKEUP_COUNT)
		return 0;
	r = read_count(b->count_path, &b->prepared_count);
	if (r < 0)
		return r;
	pthread_mutex_lock(&b->lock);
	b->stats.wakeup_count = b->prepared_count;
	pthread_mutex_unlock(&b->lock);
	b->prepared = true;
	return 0;
}

int qj_power_start(struct qj_power *b)
{
	int r = 0;

	pthread_mutex_lock(&b->lock);
	if (b->job) {
		r = -EBUSY;
	} else {
		atomic_store(&b->cancel, false);
		b->job = true;
		b->done = false;
		pthread_cond_signal(&b->cond);
	}
	pthread_mutex_unlock(&b->lock);
	return r;
}

void qj_power_interrupt(struct qj_power *b)
{
	atomic_store(&b->cancel, true);
	(void)pthread_kill(b->worker, SIGUSR1);
}

bool qj_power_running(const struct qj_power *b)
{
	bool r;

	pthread_mutex_lock((pthread_mutex_t *)&b->lock);
	r = b->job;
	pthread_mutex_unlock((pthread_mutex_t *)&b->lock);
	return r;
}

int qj_power_collect(struct qj_power *b, int *ret_result)
{
	uint64_t v;
	int r = 0;

	(void)!read(b->notify_fd, &v, sizeof(v));
	pthread_mutex_lock(&b->lock);
	if (b->done) {
		b->done = false;
		*ret_result = b->result;
		r = 1;
	}
	pthread_mutex_unlock(&b->lock);
	return r;
}

void qj_power_get_stats(const struct qj_power *b, struct qj_power_stats *ret)
{
	pthread_mutex_lock((pthread_mutex_t *)&b->lock);
	*ret = b->stats;
	pthread_mutex_unlock((pthread_mutex_t *)&b->lock);
}

void qj_power_log_result(uint64_t cycle, int result)
{
	/* The patched kernel's "qos" errors: kernel/README.md, "Errors of a qos write". */
	if (result == -ERANGE)
		log_warning("Cycle %" PRIu64 ": the kernel refused to suspend: an incompatible "
			    "latency constraint is active (ERANGE), retrying with backoff",
			    cycle);
	else if (result == -EAGAIN)
		log_info("Cycle %" PRIu64 ": a wakeup event or a new constraint made the suspend "
			 "back out (EAGAIN), retrying",
			 cycle);
	else if (result == -EBUSY)
		log_warning("Cycle %" PRIu64 ": the kernel is busy (another suspend, autosleep, or "
			    "a task or device refused: EBUSY), retrying with backoff",
			    cycle);
	else if (result == -ESTALE)
		log_info("Cycle %" PRIu64 ": wakeup events since the wakeup count was read, "
			 "aborting",
			 cycle);
	else if (result < 0 && result != -EINTR)
		log_warning_errno(result, "Cycle %" PRIu64 ": suspend write failed: %m, retrying",
				  cycle);
}
