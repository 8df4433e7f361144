// SPDX-License-Identifier: LGPL-2.1-or-later
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "procfs.h"
#include "sampler.h"
#include "util.h"

bool qj_sample_is_busy(uint64_t demand_ns, uint64_t window_usec, double threshold)
{
	if (window_usec == 0)
		return false;
	return (double)demand_ns > threshold * (double)window_usec * (double)NSEC_PER_USEC;
}

/* Counters move in 4 ms ticks: two ticks of an app's CPU in a window are noise. */
#define APP_NOISE_USEC (8 * USEC_PER_MSEC)

bool qj_demand_app_busy(const struct qj_app_window *w, double threshold, uint64_t *ret_demand_usec)
{
	uint64_t demand = w->used_usec;
	bool stall_counts = !w->stall_excused && !w->no_stall;
	double share = 1.0;

	if (stall_counts && demand + w->stalled_usec >= demand)
		demand += w->stalled_usec;
	if (ret_demand_usec)
		*ret_demand_usec = demand;
	/*
	 * The stall is what the app wanted beyond what it got.  Without it (no
	 * PSI, or the wait is for our signals) its CPU is judged against what it
	 * would get: on a loaded machine a runnable task gets @share of a CPU, and
	 * an app the load holds to that is as busy as one taking a whole CPU on an
	 * idle machine (docs/decisions.md).
	 */
	if (!stall_counts && w->share > 0 && w->share < 1.0) {
		share = w->share;
		if (demand <= APP_NOISE_USEC)
			return false;
	}
	return qj_sample_is_busy(demand * NSEC_PER_USEC, w->window_usec, threshold * share);
}

double qj_demand_share(unsigned cpus, double others)
{
	double s = (double)(cpus ? cpus : 1) / ((others > 0 ? others : 0) + 1.0);

	return s < 1.0 ? s : 1.0;
}

enum qj_task_activity qj_demand_task_verdict(const struct qj_task_window *w)
{
	enum qj_task_activity act = w->activity;

	if (act == QJ_TASK_IDLE && w->spawned >= 2 && w->app_busy)
		act = QJ_TASK_BUSY;
	if (act == QJ_TASK_UNKNOWN && w->acted_on && w->runnable && w->app_judged && w->app_busy &&
	    !w->notify_waiting)
		act = QJ_TASK_BUSY;
	if (act == QJ_TASK_BUSY && w->acted_on && w->signal_pending)
		act = QJ_TASK_UNKNOWN;
	if (act == QJ_TASK_BUSY && w->notify_waiting && !w->own_cpu_busy)
		act = QJ_TASK_UNKNOWN;
	return act;
}

static uint64_t sub(uint64_t b, uint64_t a)
{
	return b > a ? b - a : 0;
}

uint64_t qj_demand_delta_ns(const struct qj_demand *a, const struct qj_demand *b)
{
	uint64_t d = sub(b->cpu_ns, a->cpu_ns) + sub(b->children_ns, a->children_ns);

	/* Waiting counts only for a task that ran and never blocked by itself. */
	if (b->voluntary == a->voluntary && b->slices > a->slices)
		d += sub(b->wait_ns, a->wait_ns);
	return d;
}

uint64_t qj_demand_window_ns(const struct qj_demand *a, const struct qj_demand *b,
			     uint64_t window_usec, unsigned threads)
{
	uint64_t cpu = sub(b->cpu_ns, a->cpu_ns), wait = 0, most;

	if (b->voluntary == a->voluntary && b->slices > a->slices)
		wait = sub(b->wait_ns, a->wait_ns);
	/* Each thread was on a CPU or waiting for one for the window at most. */
	most = (uint64_t)(threads ? threads : 1) * window_usec * NSEC_PER_USEC;
	wait = wait < sub(most, cpu) ? wait : sub(most, cpu);
	return cpu + sub(b->children_ns, a->children_ns) + wait;
}

bool qj_demand_starved(const struct qj_demand *a, const struct qj_demand *b)
{
	return b->runnable && b->slices == a->slices && b->children_ns == a->children_ns;
}

enum qj_task_activity qj_demand_classify(const struct qj_demand *a, const struct qj_demand *b,
					 uint64_t window_usec, double threshold, bool use_history)
{
	/* run_delay is only brought up to date when the task runs: look at the state. */
	bool starved = qj_demand_starved(a, b);

	if (starved) {
		if (!use_history)
			return QJ_TASK_UNKNOWN;
		/*
		 * Before any action a stopped task resumes at the next resume
		 * anyway: better a sleeper that waited all window stopped than
		 * a spinner left running.
		 */
		if (b->runnable_spinner || (a->runnable && b->voluntary == a->voluntary))
			return QJ_TASK_BUSY;
		return QJ_TASK_IDLE;
	}
	/*
	 * Runnable when the window opened and when it closed, and never blocked
	 * in between: it wanted the CPU all along, whatever share contention
	 * left it (1000 spinners on 2 CPUs get 0.2% each).
	 */
	if (a->runnable && b->runnable && b->voluntary == a->voluntary)
		return QJ_TASK_BUSY;
	return qj_sample_is_busy(qj_demand_delta_ns(a, b), window_usec, threshold) ? QJ_TASK_BUSY :
										     QJ_TASK_IDLE;
}

int qj_sample_open(struct qj_sample *s, pid_t pid, bool keep)
{
	char path[QJ_PROCFS_PATH_MAX];

	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->fd = s->status_fd = -EBADF;
	if (!keep)
		return 0; /* opened by path at each read */
	qj_procfs_path(path, sizeof(path), "%d/schedstat", pid);
	s->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0)
		return errno == ENOENT ? -ESRCH : negative_errno();
	qj_procfs_path(path, sizeof(path), "%d/status", pid);
	s->status_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->status_fd < 0)
		return errno == ENOENT ? -ESRCH : negative_errno();
	return 0;
}

void qj_sample_close(struct qj_sample *s)
{
	if (s->fd >= 0)
		(void)close(s->fd);
	if (s->status_fd >= 0)
		(void)close(s->status_fd);
	s->fd = s->status_fd = -EBADF;
}

static int pread_text(int fd, char *buf, size_t size)
{
	ssize_t n = pread(fd, buf, size - 1, 0);

	if (n < 0)
		return errno == ESRCH ? -ESRCH : negative_errno();
	if (n == 0)
		return -ESRCH;
	buf[n] = 0;
	return 0;
}

int qj_sample_runnable(unsigned *ret)
{
	char buf[128];
	unsigned running, total;
	char path[QJ_PROCFS_PATH_MAX];
	_cleanup_close_ int fd = qj_procfs_path(path, sizeof(path), "loadavg") < 0 ?
					 -ENAMETOOLONG :
					 open(path, O_RDONLY | O_CLOEXEC);
	int r;

	if (fd < 0)
		return negative_errno();
	r = pread_text(fd, buf, sizeof(buf));
	if (r < 0)
		return r;
	/* "0.50 0.40 0.30 RUNNING/TOTAL LASTPID": RUNNING counts the reader too. */
	if (sscanf(buf, "%*s %*s %*s %u/%u", &running, &total) != 2)
		return -EBADMSG;
	*ret = running > 0 ? running - 1 : 0;
	return 0;
}

int qj_sample_check(const char *proc_dir)
{
	char path[4096], buf[256];
	_cleanup_close_ int fd = -EBADF;
	uint64_t cpu, wait, slices;
	int r;

	if ((size_t)snprintf(path, sizeof(path), "%s/schedstat", proc_dir) >= sizeof(path))
		return -ENAMETOOLONG;
	/*
	 * The run time of a task that has not blocked since it started reads 0: the kernel
	 * adds it up when the task blocks or at a tick.  Block once (a daemon checks itself
	 * first thing after exec, and refused to start at random).
	 */
	(void)nanosleep(&(struct timespec){ .tv_nsec = 1000 }, NULL);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -EOPNOTSUPP : negative_errno();
	r = pread_text(fd, buf, sizeof(buf));
	if (r < 0)
		return r == -ESRCH ? -EOPNOTSUPP : r;
	r = qj_proc_schedstat_parse(buf, &cpu, &wait, &slices);
	if (r < 0)
		return r;
	/* A task that has run has run time and slices; zeros mean sched_info is off. */
	return cpu == 0 || slices == 0 ? -EOPNOTSUPP : 0;
}

/* Adds one thread's counters from its kept or opened fds. */
static int add_thread(int sched_fd, int status_fd, char state, struct qj_demand *d)
{
	char buf[2048];
	struct qj_proc_status st;
	uint64_t cpu, wait, slices;
	int r;

	r = pread_text(sched_fd, buf, sizeof(buf));
	if (r < 0)
		return r;
	r = qj_proc_schedstat_parse(buf, &cpu, &wait, &slices);
	if (r < 0)
		return r;
	r = pread_text(status_fd, buf, sizeof(buf));
	if (r < 0)
		return r;
	r = qj_proc_status_parse(buf, &st);
	if (r < 0)
		return r;
	d->cpu_ns += cpu;
	d->wait_ns += wait;
	d->voluntary += st.voluntary_switches;
	d->slices += slices;
	d->nonvoluntary += st.nonvoluntary_switches;
	if (state == 'R') {
		d->runnable = true;
		/* Never ran since it was forked (0/0) counts too: it never blocked. */
		if (st.nonvoluntary_switches >= st.voluntary_switches)
			d->runnable_spinner = true;
	}
	return 0;
}

/* The thread exited meanwhile: it adds nothing.  Any other error fails the read. */
static bool thread_gone(int r)
{
	return r == -ESRCH || r == -ENOENT;
}

static int add_threads(pid_t pid, struct qj_demand *d)
{
	_cleanup_free_ pid_t *tids = NULL;
	size_t n = 0;
	int r;

	r = qj_proc_tids(pid, &tids, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		char path[QJ_PROCFS_PATH_MAX];
		_cleanup_close_ int sfd = -EBADF, tfd = -EBADF;
		struct qj_proc_stat tst;

		/*
		 * Fail closed: a thread we cannot read (EMFILE, ENOMEM, ...) is
		 * not an idle thread.  Only a thread that exited adds 0.
		 */
		qj_procfs_path(path, sizeof(path), "%d/task/%d/schedstat", pid, tids[i]);
		sfd = open(path, O_RDONLY | O_CLOEXEC);
		if (sfd < 0) {
			r = errno == ENOENT ? -ESRCH : negative_errno();
			if (thread_gone(r))
				continue;
			return r;
		}
		qj_procfs_path(path, sizeof(path), "%d/task/%d/status", pid, tids[i]);
		tfd = open(path, O_RDONLY | O_CLOEXEC);
		if (tfd < 0) {
			r = errno == ENOENT ? -ESRCH : negative_errno();
			if (thread_gone(r))
				continue;
			return r;
		}
		snprintf(path, sizeof(path), "%d/task/%d", pid, tids[i]);
		r = qj_proc_stat_read_path(path, &tst);
		if (r == 0)
			r = add_thread(sfd, tfd, tst.state, d);
		if (r < 0 && !thread_gone(r))
			return r;
	}
	return 0;
}

/* A single-threaded task whose files are not kept open: opened for this read. */
static int add_unkept(pid_t pid, char state, struct qj_demand *d)
{
	_cleanup_close_ int sfd = -EBADF, tfd = -EBADF;
	char path[QJ_PROCFS_PATH_MAX];

	qj_procfs_path(path, sizeof(path), "%d/schedstat", pid);
	sfd = open(path, O_RDONLY | O_CLOEXEC);
	if (sfd < 0)
		return errno == ENOENT ? -ESRCH : negative_errno();
	qj_procfs_path(path, sizeof(path), "%d/status", pid);
	tfd = open(path, O_RDONLY | O_CLOEXEC);
	if (tfd < 0)
		return errno == ENOENT ? -ESRCH : negative_errno();
	return add_thread(sfd, tfd, state, d);
}

static long clock_hz(void)
{
	static long hz;

	if (!hz) {
		hz = sysconf(_SC_CLK_TCK);
		if (hz <= 0)
			hz = 100;
	}
	return hz;
}

int qj_sample_read(struct qj_sample *s, const struct qj_proc_stat *st, struct qj_demand *ret)
{
	long hz = clock_hz();
	struct qj_demand d = {};
	int r;

	/* Threads that exited earlier drop out of the sums: a few ticks of error. */
	if (st->num_threads > 1)
		r = add_threads(s->pid, &d);
	else if (s->fd >= 0 && s->status_fd >= 0)
		r = add_thread(s->fd, s->status_fd, st->state, &d);
	else
		r = add_unkept(s->pid, st->state, &d);
	if (r < 0)
		return r;
	d.children_ns = (st->cutime + st->cstime) * (1000000000ULL / (uint64_t)hz);
	*ret = d;
	return 0;
}

int qj_sample_restart_status(struct qj_sample *s, const struct qj_proc_stat *st,
			     const struct qj_proc_status *ps, uint64_t now_usec)
{
	char buf[256];
	struct qj_demand d = {};
	uint64_t cpu, wait, slices;
	int r;

	if (st->num_threads > 1)
		return qj_sample_restart(s, st, now_usec);
	/* One thread: its status is the process's, read by the caller a moment ago. */
	if (s->fd >= 0) {
		r = pread_text(s->fd, buf, sizeof(buf));
	} else {
		_cleanup_close_ int fd = -EBADF;
		char path[QJ_PROCFS_PATH_MAX];

		qj_procfs_path(path, sizeof(path), "%d/schedstat", s->pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		r = fd < 0 ? (errno == ENOENT ? -ESRCH : negative_errno()) :
			     pread_text(fd, buf, sizeof(buf));
	}
	if (r < 0)
		return r;
	r = qj_proc_schedstat_parse(buf, &cpu, &wait, &slices);
	if (r < 0)
		return r;
	d = (struct qj_demand){ .cpu_ns = cpu,
				.wait_ns = wait,
				.slices = slices,
				.voluntary = ps->voluntary_switches,
				.nonvoluntary = ps->nonvoluntary_switches,
				.runnable = st->state == 'R',
				.runnable_spinner = st->state == 'R' &&
						    ps->nonvoluntary_switches >=
							    ps->voluntary_switches };
	d.children_ns = (st->cutime + st->cstime) * (1000000000ULL / (uint64_t)clock_hz());
	s->have_base = true;
	s->t0_usec = now_usec;
	s->base = d;
	return 0;
}

int qj_sample_restart(struct qj_sample *s, const struct qj_proc_stat *st, uint64_t now_usec)
{
	struct qj_demand d;
	int r = qj_sample_read(s, st, &d);

	if (r < 0)
		return r;
	s->have_base = true;
	s->t0_usec = now_usec;
	s->base = d;
	return 0;
}

int qj_sample_observe(struct qj_sample *s, const struct qj_proc_stat *st, uint64_t now_usec,
		      uint64_t window_usec, double threshold, bool use_history,
		      enum qj_task_activity *ret)
{
	struct qj_demand d;
	int r;

	if (!s->have_base)
		return qj_sample_restart(s, st, now_usec);
	if (now_usec < s->t0_usec + window_usec)
		return 0;
	r = qj_sample_read(s, st, &d);
	if (r < 0)
		return r;
	s->last_window_usec = now_usec - s->t0_usec;
	/* The figure the kill log gives; the verdict below weighs the raw demand. */
	s->last_ns = qj_demand_window_ns(&s->base, &d, s->last_window_usec, st->num_threads);
	s->last_starved = qj_demand_starved(&s->base, &d);
	*ret = qj_demand_classify(&s->base, &d, s->last_window_usec, threshold, use_history);
	s->t0_usec = now_usec;
	s->base = d;
	return 1;
}
