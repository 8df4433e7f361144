// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * bench-evasion: for each adversary and each old test app, jailed in a real
 * qosjaild (dry-run backend), the time from the release of the last hold to
 * "suspending" (median of 5) against the policy's quiesce bound, and the CPU
 * the app's group used over 500 ms while suspending (goal: nothing).  The
 * baseline measured in the same run is the same cycle with only a sleeper in
 * the jail: release -> suspending when nothing needs containing (idle_delay
 * plus one sample window).  Prints one table row per app; exit status 1 when
 * any median is above the bound.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "daemon-harness.h"
#include "itest.h"
#include "qosjail.h"
#include "util.h"

#define REPS 5
#define WINDOW_MS 300
#define GRACE_MS 300

static const char policy[] = "version: 1\n"
			     "suspend:\n"
			     "  backend: dry-run\n"
			     "  idle_delay: 100ms\n"
			     "  dry_run_length: 1s\n"
			     "jail:\n"
			     "  cgroup: @CG@\n"
			     "  cpu_cgroup: @CPU@\n"
			     "  busy_threshold: 50%\n"
			     "  sample_window: 300ms\n"
			     "escalation:\n"
			     "  ladder:\n"
			     "    - { action: SIGXCPU, grace: 300ms }\n"
			     "    - { action: SIGSTOP, grace: 300ms }\n"
			     "    - { action: SIGTERM, grace: 300ms }\n"
			     "    - { action: SIGKILL, grace: 300ms }\n"
			     "apps:\n"
			     "  - name: adv\n"
			     "    match: { exe: \"/nonexistent/adv\" }\n"
			     "  - name: polite\n"
			     "    match: { exe: \"/nonexistent/polite\" }\n"
			     "    notify: true\n";

struct subject {
	const char *name;
	const char *bin; /* tests/apps/qj-BIN */
	const char *app;
	const char *cmd; /* with bin "run": $QJ_RUN_CMD */
};

static const struct subject subjects[] = {
	{ "sleeper (baseline)", "sleeper", "adv", NULL },
	{ "busy", "busy", "adv", NULL },
	{ "polite", "polite", "polite", NULL },
	{ "stubborn", "stubborn", "adv", NULL },
	{ "resurrector", "resurrector", "adv", NULL },
	{ "forker", "forker", "adv", NULL },
	{ "spinner thread", "spinner", "adv", NULL },
	{ "main thread exit", "mainexit", "adv", NULL },
	{ "hop process", "hopper", "adv", NULL },
	{ "hop thread", "hopthread", "adv", NULL },
	{ "daemoniser", "daemonize", "adv", NULL },
	{ "duty-cycler", "dutycycle", "adv", NULL },
	{ "short spinners", "spinners", "adv", NULL },
	{ "make -j2 loop", "run", "adv", "make" },
	{ "shell pipeline", "run", "adv", "cat /dev/zero | gzip -1 | md5sum >/dev/null" },
	{ "stop in a thread", "waitmain", "adv", NULL },
	{ "fork storm", "forkstorm", "adv", NULL },
	{ "chromium", "run", "adv", "chromium" },
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static uint64_t usage(struct harness *h, const char *app)
{
	uint64_t v = 0;

	(void)itest_usage_usec(h->it, app, &v);
	return v;
}

static size_t group_tasks(const char *cg, const char *app)
{
	char path[512];
	pid_t *pids = NULL;
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/%s/cgroup.procs", cg, app);
	(void)qj_cgroup_read_pids(path, &pids, &n);
	free(pids);
	return n;
}

static const char *state_of(struct harness *h, char *buf, size_t size)
{
	json_t *j = harness_status(h);

	snprintf(buf, size, "%s", j ? json_string_value(json_object_get(j, "state")) ?: "" : "");
	json_decref(j);
	return buf;
}

/*
 * Ends the subject: SIGKILL to every process in its group (all started by this
 * benchmark), until the group is empty.  Not cgroup.kill: a kill still in flight
 * there also takes the next subject spawned into the group.
 */
static void kill_group(const char *cg, const char *app)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s/cgroup.procs", cg, app);
	for (int round = 0; round < 100; round++) {
		pid_t *pids = NULL;
		size_t n = 0;

		(void)qj_cgroup_read_pids(path, &pids, &n);
		for (size_t i = 0; i < n; i++) {
			int fd = pidfd_open(pids[i], 0);

			if (fd >= 0) {
				(void)pidfd_send_signal(fd, SIGKILL, NULL, 0);
				close(fd);
			}
		}
		free(pids);
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (n == 0)
			break;
		usleep(20 * 1000);
	}
}

/* One subject: REPS cycles; the median of release -> suspending and the worst CPU. */
static int measure(struct harness *h, const struct subject *s, uint64_t *ret_median,
		   uint64_t *ret_cpu)
{
	char exe[512], st[32], mk[600], cmd[1600];
	char *argv[] = { exe, NULL };
	struct qj_conn *c = NULL, *holder = NULL;
	uint64_t took[REPS], worst_cpu = 0;
	pid_t pid;
	int r;

	snprintf(exe, sizeof(exe), "%s/tests/apps/qj-%s", getenv("QJ_BUILD_DIR"), s->bin);
	if (s->cmd && strcmp(s->cmd, "make") == 0) {
		FILE *f;

		snprintf(mk, sizeof(mk), "%s/Makefile", h->dir);
		f = fopen(mk, "we");
		if (!f)
			return -errno;
		fprintf(f, "all: a b c d\na b c d:\n\t@awk 'BEGIN { for (i = 0; i < 3000000; "
			   "i++) x += i }'\n");
		fclose(f);
		snprintf(cmd, sizeof(cmd),
			 "cd %s && while :; do make -s -j2 -B all >/dev/null 2>&1 || exit 3; done",
			 h->dir);
		setenv("QJ_RUN_CMD", cmd, 1);
	} else if (s->cmd && strcmp(s->cmd, "chromium") == 0) {
		if (access("/usr/bin/chromium", X_OK) < 0)
			return -ENOENT;
		/* The page of integration/adversary's test_chromium. */
		snprintf(mk, sizeof(mk), "%s/spin.html", h->dir);
		r = itest_write_spin_page(mk);
		if (r < 0)
			return r;
		snprintf(cmd, sizeof(cmd),
			 "exec /usr/bin/chromium --headless=new --no-sandbox --disable-gpu "
			 "--no-first-run --user-data-dir=%s/chromium file://%s >/dev/null 2>&1",
			 h->dir, mk);
		setenv("QJ_RUN_CMD", cmd, 1);
	} else if (s->cmd) {
		setenv("QJ_RUN_CMD", s->cmd, 1);
	}
	if (qj_open(h->socket, &c) < 0 || qj_open(h->socket, &holder) < 0)
		return -EIO;
	r = qj_hold(holder, "bench", "between cycles", 0, 0);
	if (r < 0)
		return r;
	r = qj_spawn(c, s->app, argv, &pid, NULL);
	if (r < 0)
		return r;
	/* Chromium starts for seconds: its start is not what is measured. */
	usleep(s->cmd && strcmp(s->cmd, "chromium") == 0 ? 8000 * 1000 : 500 * 1000);
	for (int i = 0; i < REPS; i++) {
		uint64_t t0, u0, u1;

		if (getenv("QJ_BENCH_DEBUG"))
			fprintf(stderr, "%s rep %d: %zu tasks in the group, spawned %d state %c\n",
				s->name, i, group_tasks(h->it->cg_path, s->app), pid,
				itest_state(pid));
		qj_close(holder);
		holder = NULL;
		t0 = now_usec(CLOCK_MONOTONIC);
		while (strcmp(state_of(h, st, sizeof(st)), "suspending") != 0 &&
		       now_usec(CLOCK_MONOTONIC) < t0 + 120 * USEC_PER_SEC)
			usleep(5 * 1000);
		took[i] = now_usec(CLOCK_MONOTONIC) - t0;
		u0 = usage(h, s->app);
		usleep(500 * 1000);
		u1 = usage(h, s->app);
		if (u1 - u0 > worst_cpu)
			worst_cpu = u1 - u0;
		if (qj_open(h->socket, &holder) < 0 ||
		    qj_hold(holder, "bench", "between cycles", 0, 0) < 0)
			return -EIO;
		while (strcmp(state_of(h, st, sizeof(st)), "awake") != 0)
			usleep(5 * 1000);
		usleep(300 * 1000); /* running again before the next release */
	}
	kill_group(h->it->cg_path, s->app);
	(void)waitpid(pid, NULL, WNOHANG);
	qj_close(holder);
	qj_close(c);
	qsort(took, REPS, sizeof(took[0]), cmp_u64);
	*ret_median = took[REPS / 2];
	*ret_cpu = worst_cpu;
	return 0;
}

int main(void)
{
	struct harness h;
	uint64_t bound_ms, base = 0;
	int r, over = 0;

	harness_debug = false;
	r = harness_start(&h, policy);
	if (r < 0) {
		fprintf(stderr, "bench-evasion: cannot start qosjaild: %s\n", strerror(-r));
		return r == -EOPNOTSUPP ? 77 : 1;
	}
	{
		json_t *j = harness_status(&h);

		bound_ms = j ? (uint64_t)json_integer_value(
				       json_object_get(json_object_get(j, "jail"), "bound_ms")) :
			       0;
		json_decref(j);
	}
	printf("bench-evasion: release of the last hold -> suspending, median of %d; policy "
	       "bound %" PRIu64 " ms (window %d ms, grace %d ms x4, idle_delay 100 ms)\n",
	       REPS, bound_ms, WINDOW_MS, GRACE_MS);
	printf("%-20s %12s %10s %12s %18s\n", "app", "median ms", "/ bound", "/ baseline",
	       "jail CPU susp. us");
	for (size_t i = 0; i < ARRAY_SIZE(subjects); i++) {
		uint64_t med = 0, cpu = 0;

		if (getenv("QJ_BENCH_ONLY") && i > 0 &&
		    !strstr(getenv("QJ_BENCH_ONLY"), subjects[i].bin))
			continue;
		r = measure(&h, &subjects[i], &med, &cpu);
		if (r < 0) {
			printf("%-20s failed: %s\n", subjects[i].name, strerror(-r));
			over++;
			continue;
		}
		if (i == 0)
			base = med;
		printf("%-20s %12.1f %10.2f %12.2f %18" PRIu64 "%s\n", subjects[i].name,
		       (double)med / 1000.0, bound_ms ? (double)med / 1000.0 / (double)bound_ms : 0,
		       base ? (double)med / (double)base : 0, cpu,
		       med / 1000 > bound_ms ? "  OVER BOUND" : "");
		fflush(stdout);
		over += med / 1000 > bound_ms;
	}
	harness_stop(&h);
	harness_cleanup(&h);
	return over ? 1 : 0;
}
