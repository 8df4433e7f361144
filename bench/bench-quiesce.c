// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Quiesce of N busy jailed tasks (10, 100, 1,000, 10,000): time from
 * quiesce_begin to "every task blocked" (sample window + SIGSTOP +
 * confirmation), against the baseline measured in the same run on the same
 * tasks: writing cgroup.freeze and waiting for "frozen 1" in cgroup.events.
 * The ladder cannot act before one sample window has shown a task busy, so the
 * baseline is the freezer's time plus the configured window; the goal is a
 * ratio within 2, and the quiesce within the policy's own bound.
 *
 * The engine writes its kill log (fsync'd, as the daemon's), and the table is
 * printed twice: alone, and with two CPU hogs (busy processes outside the
 * jail, started and killed by pid here) beside it.
 *
 * Runs as root at SCHED_FIFO (children reset to SCHED_OTHER): 10,000 busy
 * tasks at normal priority would starve the benchmark itself (docs/platform.md).
 * Usage: bench-quiesce [MAX_TASKS [MIN_TASKS]]
 */
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "engine.h"
#include "killlog.h"
#include "log.h"
#include "test-policy.h"
#include "util.h"

#ifndef MAX
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif

#define WINDOW (300 * USEC_PER_MSEC)
#define GRACE (300 * USEC_PER_MSEC)
#define HOGS 2

static double ms(uint64_t usec)
{
	return (double)usec / 1000.0;
}

/* Waits for "frozen W" in @events; returns the time it took. */
static uint64_t wait_frozen(const char *events, int want)
{
	uint64_t start = now_usec(CLOCK_MONOTONIC);
	char needle[16];
	int fd = open(events, O_RDONLY | O_CLOEXEC);

	snprintf(needle, sizeof(needle), "frozen %d", want);
	for (;;) {
		char buf[256];
		struct pollfd pfd = { .fd = fd, .events = POLLPRI };
		ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

		if (n > 0) {
			buf[n] = 0;
			if (strstr(buf, needle))
				break;
		}
		(void)poll(&pfd, 1, 100);
	}
	close(fd);
	return now_usec(CLOCK_MONOTONIC) - start;
}

static pid_t spin(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		volatile unsigned long x = 0;

		for (;;)
			x++;
	}
	return pid;
}

struct result {
	unsigned n, stopped;
	uint64_t quiesce_us, begin_us, step_max_us, freeze_us, bound_us;
	unsigned steps, records;
	int r;
};

/* Kill-log records of the cycle (actions, not the summary). */
static unsigned count_records(const char *path)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	unsigned n = 0;

	if (!f)
		return 0;
	while (getline(&line, &cap, f) > 0)
		n += strstr(line, "\"action\":\"SIGSTOP\"") != NULL;
	free(line);
	fclose(f);
	return n;
}

static int run(unsigned n, struct result *res)
{
	char cg[256], cpu[256], state[128], dir[300], path[400], logp[200];
	struct qj_policy *p = qj_test_policy_new(GRACE);
	struct qj_killlog *log = NULL;
	struct qj_engine *e = NULL;
	struct qj_cgroup *c = NULL;
	pid_t *pids = calloc(n, sizeof(*pids));
	uint64_t t0, next;
	struct qj_engine_counts counts = {};
	int r;

	*res = (struct result){ .n = n };
	snprintf(cg, sizeof(cg), "/sys/fs/cgroup/unified/qosjail-bench-%d", getpid());
	snprintf(cpu, sizeof(cpu), "/sys/fs/cgroup/cpu/qosjail-bench-%d", getpid());
	snprintf(state, sizeof(state), "/tmp/qosjail-bench-%d", getpid());
	snprintf(logp, sizeof(logp), "/var/tmp/qosjail-bench-%d/kill.log", getpid());
	free(p->cgroup_path);
	free(p->cpu_cgroup_path);
	p->cgroup_path = strdup(cg);
	p->cpu_cgroup_path = strdup(cpu);
	p->sample_window_usec = WINDOW;
	qj_test_policy_add_app(p, "busy");
	res->bound_us = qj_policy_quiesce_bound_usec(p);
	r = qj_killlog_open(logp, 0, 0, &log);
	if (r < 0) {
		fprintf(stderr, "kill log %s: %s\n", logp, strerror(-r));
		return 1;
	}
	r = qj_engine_new(p, log, state, &e);
	if (r < 0) {
		fprintf(stderr, "engine: %s\n", strerror(-r));
		return 1;
	}
	for (unsigned i = 0; i < n; i++) {
		pids[i] = spin();
		if (pids[i] < 0 || qj_engine_place(e, "busy", pids[i]) < 0) {
			fprintf(stderr, "spawn/place %u failed\n", i);
			return 1;
		}
	}
	usleep(500 * 1000); /* let them all get going */

	/* Baseline: the cgroup freezer on the same group. */
	(void)qj_cgroup_new(cg, cpu, &c);
	snprintf(dir, sizeof(dir), "%s/busy", cg);
	snprintf(path, sizeof(path), "%s/cgroup.events", dir);
	t0 = now_usec(CLOCK_MONOTONIC);
	(void)qj_cgroup_freeze(c, "busy", true);
	(void)wait_frozen(path, 1);
	res->freeze_us = now_usec(CLOCK_MONOTONIC) - t0;
	(void)qj_cgroup_freeze(c, "busy", false);
	(void)wait_frozen(path, 0);
	usleep(300 * 1000);

	/* qosjail: begin, then step at the engine's deadlines until all blocked. */
	t0 = now_usec(CLOCK_MONOTONIC);
	r = qj_engine_quiesce_begin(e, 1, t0);
	res->begin_us = now_usec(CLOCK_MONOTONIC) - t0;
	while (r >= 0) {
		struct timespec ts;
		uint64_t s0 = now_usec(CLOCK_MONOTONIC);

		r = qj_engine_quiesce_step(e, s0, &next);
		res->steps++;
		res->step_max_us = MAX(res->step_max_us, now_usec(CLOCK_MONOTONIC) - s0);
		if (r != 0)
			break;
		ts.tv_sec = (time_t)(next / USEC_PER_SEC);
		ts.tv_nsec = (long)(next % USEC_PER_SEC * 1000);
		(void)clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
	res->quiesce_us = now_usec(CLOCK_MONOTONIC) - t0;
	res->r = r;
	(void)qj_engine_counts(e, &counts);
	res->stopped = counts.stopped;
	if (r < 0)
		fprintf(stderr, "quiesce failed: %s\n", strerror(-r));
	(void)qj_engine_restore(e, "bench");
	res->records = count_records(logp);

	/* The engine's fds closed first: the kill must not fail for want of one. */
	qj_engine_free(e);
	if (qj_cgroup_kill(c, "busy") < 0)
		for (unsigned i = 0; i < n; i++)
			(void)kill(pids[i], SIGKILL);
	for (unsigned i = 0; i < n; i++)
		(void)waitpid(pids[i], NULL, 0);
	(void)qj_cgroup_app_remove(c, "busy");
	(void)qj_cgroup_remove(c);
	qj_cgroup_free(c);
	qj_killlog_free(log);
	qj_policy_free(p);
	snprintf(path, sizeof(path), "rm -rf %s /var/tmp/qosjail-bench-%d", state, getpid());
	(void)!system(path);
	free(pids);
	return r < 0;
}

static void print_row(const struct result *x)
{
	double base = (double)(x->freeze_us + WINDOW);

	printf("%6u %8u %8u %10.1f %8.1f %6u %9.1f %9.1f %8.1f %6.2f  %-6s %s\n", x->n, x->stopped,
	       x->records, ms(x->quiesce_us), ms(x->begin_us), x->steps, ms(x->step_max_us),
	       ms(x->freeze_us), ms(x->bound_us), (double)x->quiesce_us / base,
	       x->r == 1 && x->quiesce_us <= 2 * (x->freeze_us + WINDOW) ? "met" : "missed",
	       x->r == 1 && x->quiesce_us <= x->bound_us ? "yes" : "NO");
	fflush(stdout);
}

static unsigned min_tasks;

static int table(const unsigned *sizes, size_t n_sizes, unsigned max, unsigned hogs)
{
	pid_t hog[HOGS];
	int ret = 0;

	for (unsigned i = 0; i < hogs; i++)
		hog[i] = spin();
	printf("\n%s: window %.0f ms, goal: quiesce <= 2 x (freezer + window), within the bound\n",
	       hogs ? "With two CPU hogs beside it" : "Alone", ms(WINDOW));
	printf("%6s %8s %8s %10s %8s %6s %9s %9s %8s %6s  %-6s %s\n", "tasks", "stopped", "records",
	       "quiesce", "begin", "steps", "max step", "freezer", "bound", "ratio", "goal",
	       "in bound");
	for (size_t i = 0; i < n_sizes && sizes[i] <= max; i++) {
		struct result x;

		if (sizes[i] < min_tasks)
			continue;
		ret |= run(sizes[i], &x);
		print_row(&x);
	}
	for (unsigned i = 0; i < hogs; i++) {
		(void)kill(hog[i], SIGKILL);
		(void)waitpid(hog[i], NULL, 0);
	}
	return ret;
}

int main(int argc, char **argv)
{
	struct sched_param sp = { .sched_priority = 1 };
	static const unsigned sizes[] = { 10, 100, 1000, 10000 };
	unsigned max = argc > 1 ? (unsigned)atoi(argv[1]) : 10000;
	struct rlimit rl = { .rlim_cur = 65536, .rlim_max = 65536 };
	int ret = 0;

	min_tasks = argc > 2 ? (unsigned)atoi(argv[2]) : 0;
	if (geteuid() != 0) {
		fprintf(stderr, "bench-quiesce: needs root (cgroups, SCHED_FIFO)\n");
		return 77;
	}
	if (getenv("QJ_BENCH_DEBUG"))
		qj_log_set_level(LOG_DEBUG);
	else
		qj_log_set_level(LOG_WARNING); /* one notice per signal: 10,000 lines */
	/* Three fds a jailed task; as under systemd (LimitNOFILE=524288), not a shell's 20,000. */
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		perror("setrlimit, continuing");
	if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) < 0)
		perror("sched_setscheduler, continuing at normal priority");
	ret |= table(sizes, ARRAY_SIZE(sizes), max, 0);
	ret |= table(sizes, ARRAY_SIZE(sizes), max, HOGS);
	return ret;
}
