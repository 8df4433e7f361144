// SPDX-License-Identifier: LGPL-2.1-or-later
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sampler.h"
#include "util.h"

bool qj_sample_is_busy(uint64_t demand_ns, uint64_t window_usec, double threshold)
{
	if (window_usec == 0)
		return false;
	return (double)demand_ns > threshold * (double)window_usec * (double)NSEC_PER_USEC;
}

int qj_sample_open(struct qj_sample *s, pid_t pid)
{
	char path[64];

	memset(s, 0, sizeof(*s));
	s->pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/schedstat", pid);
	s->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0)
		return errno == ENOENT ? -ESRCH : negative_errno();
	return 0;
}

void qj_sample_close(struct qj_sample *s)
{
	if (s->fd >= 0)
		(void)close(s->fd);
	s->fd = -EBADF;
}

static int read_schedstat_fd(int fd, uint64_t *ret)
{
	char buf[128];
	uint64_t cpu, wait;
	ssize_t n;
	int r;

	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n < 0)
		return errno == ESRCH ? -ESRCH : negative_errno();
	if (n == 0)
		return -ESRCH;
	buf[n] = 0;
	r = qj_proc_schedstat_parse(buf, &cpu, &wait);
	if (r < 0)
		return r;
	*ret = cpu + wait;
	return 0;
}

static int threads_demand(pid_t pid, uint64_t *ret)
{
	pid_t *tids = NULL;
	size_t n = 0;
	uint64_t sum = 0;
	int r;

	r = qj_proc_tids(pid, &tids, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		char path[80];
		_cleanup_close_ int fd = -EBADF;
		uint64_t v;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", pid, tids[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue; /* thread exited */
		if (read_schedstat_fd(fd, &v) == 0)
			sum += v;
	}
	free(tids);
	*ret = sum;
	return 0;
}

int qj_sample_demand_ns(struct qj_sample *s, const struct qj_proc_stat *st, uint64_t *ret)
{
	static long hz;
	uint64_t own;
	int r;

	if (!hz) {
		hz = sysconf(_SC_CLK_TCK);
		if (hz <= 0)
			hz = 100;
	}
	/* Threads exited earlier are lost from the sum; only a few ticks of error. */
	if (st->num_threads > 1)
		r = threads_demand(s->pid, &own);
	else
		r = read_schedstat_fd(s->fd, &own);
	if (r < 0)
		return r;
	*ret = own + (st->cutime + st->cstime) * (1000000000ULL / (uint64_t)hz);
	return 0;
}

int qj_sample_restart(struct qj_sample *s, const struct qj_proc_stat *st, uint64_t now_usec)
{
	uint64_t v;
	int r = qj_sample_demand_ns(s, st, &v);

	if (r < 0)
		return r;
	s->have_base = true;
	s->t0_usec = now_usec;
	s->base_ns = v;
	return 0;
}

int qj_sample_observe(struct qj_sample *s, const struct qj_proc_stat *st, uint64_t now_usec,
		      uint64_t window_usec, double threshold, enum qj_task_activity *ret)
{
	uint64_t v;
	int r;

	if (!s->have_base)
		return qj_sample_restart(s, st, now_usec);
	if (now_usec < s->t0_usec + window_usec)
		return 0;
	r = qj_sample_demand_ns(s, st, &v);
	if (r < 0)
		return r;
	s->last_ns = v > s->base_ns ? v - s->base_ns : 0;
	s->last_window_usec = now_usec - s->t0_usec;
	*ret = qj_sample_is_busy(s->last_ns, s->last_window_usec, threshold) ? QJ_TASK_BUSY :
									       QJ_TASK_IDLE;
	s->t0_usec = now_usec;
	s->base_ns = v;
	return 1;
}
