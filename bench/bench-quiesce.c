// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Quiesce of N busy jailed tasks (10, 100, 1000): time from quiesce_begin to
 * "every task blocked" (sample window + SIGSTOP + confirmation), against the
 * baseline measured in the same run on the same tasks: writing cgroup.freeze
 * and waiting for "frozen 1" in cgroup.events.  The ladder cannot act before
 * one sample window has shown a task busy, so the baseline is the freezer's
 * time plus the configured window; the goal is a ratio within 2.
 *
 * Runs as root at SCHED_FIFO (children reset to SCHED_OTHER): 1000 busy
 * tasks at normal priority would starve the benchmark itself (docs/platform.md).
 */
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "engine.h"
#include "log.h"
#include "test-policy.h"
#include "util.h"

#define WINDOW (300 * USEC_PER_MSEC)
#define GRACE (300 * USEC_PER_MSEC)

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

static int run(unsigned n)
{
	char cg[256], cpu[256], state[128], dir[300], path[400];
	struct qj_policy *p = qj_test_policy_new(GRACE);
	struct qj_engine *e = NULL;
	struct qj_cgroup *c = NULL;
	pid_t *pids = calloc(n, sizeof(*pids));
	uint64_t t0, freeze_us, thaw_us, quiesce_us, next;
	struct qj_engine_counts counts = {};
	int r;

	snprintf(cg, sizeof(cg), "/sys/fs/cgroup/unified/qosjail-bench-%d", getpid());
	snprintf(cpu, sizeof(cpu), "/sys/fs/cgroup/cpu/qosjail-bench-%d", getpid());
	snprintf(state, sizeof(state), "/tmp/qosjail-bench-%d", getpid());
	free(p->cgroup_path);
	free(p->cpu_cgroup_path);
	p->cgroup_path = strdup(cg);
	p->cpu_cgroup_path = strdup(cpu);
	p->sample_window_usec = WINDOW;
	qj_test_policy_add_app(p, "busy");
	r = qj_engine_new(p, NULL, state, &e);
	if (r < 0) {
		fprintf(stderr, "engine: %s\n", strerror(-r));
		return 1;
	}
	for (unsigned i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			volatile unsigned long x = 0;

			for (;;)
				x++;
		}
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
	freeze_us = now_usec(CLOCK_MONOTONIC) - t0;
	t0 = now_usec(CLOCK_MONOTONIC);
	(void)qj_cgroup_freeze(c, "busy", false);
	(void)wait_frozen(path, 0);
	thaw_us = now_usec(CLOCK_MONOTONIC) - t0;
	usleep(300 * 1000);

	/* qosjail: begin, then step at the engine's deadlines until all blocked. */
	t0 = now_usec(CLOCK_MONOTONIC);
	r = qj_engine_quiesce_begin(e, 1, t0);
	while (r >= 0) {
		struct timespec ts;

		r = qj_engine_quiesce_step(e, now_usec(CLOCK_MONOTONIC), &next);
		if (r != 0)
			break;
		ts.tv_sec = (time_t)(next / USEC_PER_SEC);
		ts.tv_nsec = (long)(next % USEC_PER_SEC * 1000);
		(void)clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
	quiesce_us = now_usec(CLOCK_MONOTONIC) - t0;
	(void)qj_engine_counts(e, &counts);
	if (r < 0)
		fprintf(stderr, "quiesce failed: %s\n", strerror(-r));
	(void)qj_engine_restore(e, "bench");

	printf("%5u tasks (%u stopped): qosjail %7.1f ms = window %3.0f ms + %5.1f ms; freezer "
	       "%5.1f ms (thaw %4.1f ms); ratio to freezer + window %.2f (goal <= 2: %s)\n",
	       n, counts.stopped, ms(quiesce_us), ms(WINDOW),
	       ms(quiesce_us > WINDOW ? quiesce_us - WINDOW : 0), ms(freeze_us), ms(thaw_us),
	       (double)quiesce_us / (double)(freeze_us + WINDOW),
	       quiesce_us <= 2 * (freeze_us + WINDOW) ? "met" : "missed");
	fflush(stdout);

	(void)qj_cgroup_kill(c, "busy");
	for (unsigned i = 0; i < n; i++)
		(void)waitpid(pids[i], NULL, 0);
	(void)qj_cgroup_app_remove(c, "busy");
	(void)qj_cgroup_remove(c);
	qj_cgroup_free(c);
	qj_engine_free(e);
	qj_policy_free(p);
	snprintf(path, sizeof(path), "rm -rf %s", state);
	(void)!system(path);
	free(pids);
	return r < 0;
}

int main(int argc, char **argv)
{
	struct sched_param sp = { .sched_priority = 1 };
	unsigned sizes[] = { 10, 100, 1000 };
	int ret = 0;

	if (geteuid() != 0) {
		fprintf(stderr, "bench-quiesce: needs root (cgroups, SCHED_FIFO)\n");
		return 77;
	}
	if (getenv("QJ_BENCH_DEBUG"))
		qj_log_set_level(LOG_DEBUG);
	if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) < 0)
		perror("sched_setscheduler, continuing at normal priority");
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		if (argc > 1 && (unsigned)atoi(argv[1]) < sizes[i])
			break;
		ret |= run(sizes[i]);
	}
	return ret;
}
