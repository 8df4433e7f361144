// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A full quiesce of real misbehaving processes in a real jail: every app gets
 * exactly the rungs its behaviour earns, the sleeper and a trusted busy task
 * outside the jail get nothing, every action is in the kill log, nothing
 * jailed runs at the end, and restore undoes it all.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "cgroup.h"
#include "itest.h"
#include "proc.h"
#include "test-policy.h"
#include "util.h"

#define GRACE (400 * USEC_PER_MSEC)

static int setup(void **state)
{
	*state = itest_new(GRACE);
	return 0;
}

static int teardown(void **state)
{
	itest_free(*state);
	return 0;
}

static bool pending(pid_t pid, int sig)
{
	struct qj_proc_status ps;

	return qj_proc_status_read(pid, &ps) == 0 &&
	       ((ps.shdpnd | ps.sigpnd) & (1ULL << (sig - 1)));
}

/* A starved task may not have acted on its SIGSTOP yet; it runs nothing of its own. */
static bool stopped_or_stopping(pid_t pid)
{
	return itest_state(pid) == 'T' || pending(pid, SIGSTOP);
}

static bool dead_or_dying(pid_t pid)
{
	char s = itest_state(pid);

	return s == 0 || s == 'Z' || pending(pid, SIGKILL);
}

/*
 * Until @pid blocks in its own call (the sleeper's read).  A fresh process
 * starved before it gets there wants the CPU: judged busy, and rightly stopped.
 */
static void wait_blocked(pid_t pid)
{
	for (int i = 0; i < 3000 && itest_state(pid) != 'S'; i++)
		usleep(10 * 1000);
	assert_int_equal(itest_state(pid), 'S');
}

static void assert_log(struct itest *t, pid_t pid, const char *want)
{
	char got[512];

	assert_true(itest_log_of(t, pid, got, sizeof(got)) >= 0);
	print_message("pid %d: %s\n", pid, got);
	assert_string_equal(got, want);
}

/* One SIGSTOP, taken ("blocked") or still queued when the cycle ended ("restored"). */
static void assert_log_stop(struct itest *t, pid_t pid)
{
	char got[512];

	assert_true(itest_log_of(t, pid, got, sizeof(got)) >= 0);
	print_message("pid %d: %s\n", pid, got);
	if (strcmp(got, "SIGSTOP:blocked") != 0 && strcmp(got, "SIGSTOP:restored") != 0)
		fail_msg("pid %d: %s, want SIGSTOP:blocked or SIGSTOP:restored", pid, got);
}

static void test_quiesce_full_ladder(void **state)
{
	struct itest *t = *state;
	pid_t busy, polite, stubborn, resur, forker, spinner, sleeper, trusted, resur_child;
	char line[64];
	pid_t *jailed = NULL;
	size_t n_jailed = 0;
	uint64_t slack;
	struct qj_engine_counts c;

	ITEST_REQUIRE(t);
	/*
	 * The ladder's outcome must not depend on the machine's other load: at
	 * the idle class a loaded machine starves the jail for seconds.  The
	 * QOS_NONE switch has its own test below.
	 */
	t->p->cpu_idle = false;
	qj_test_policy_add_app(t->p, "busy");
	qj_test_policy_add_app(t->p, "polite")->notify = true; /* its policy consents */
	qj_test_policy_add_app(t->p, "stubborn")->start_rung = 2; /* sigterm */
	qj_test_policy_add_app(t->p, "resurrector");
	qj_test_policy_add_app(t->p, "forker");
	qj_test_policy_add_app(t->p, "spinner");
	qj_test_policy_add_app(t->p, "sleeper");
	assert_int_equal(itest_start_engine(t), 0);

	busy = itest_spawn(t, "qj-busy", "busy", NULL, 0);
	polite = itest_spawn(t, "qj-polite", "polite", NULL, 0);
	stubborn = itest_spawn(t, "qj-stubborn", "stubborn", NULL, 0);
	resur = itest_spawn(t, "qj-resurrector", "resurrector", line, sizeof(line));
	resur_child = (pid_t)atoi(line + 6);
	forker = itest_spawn(t, "qj-forker", "forker", NULL, 0);
	spinner = itest_spawn(t, "qj-spinner", "spinner", NULL, 0);
	sleeper = itest_spawn(t, "qj-sleeper", "sleeper", NULL, 0);
	trusted = itest_spawn(t, "qj-busy", NULL, NULL, 0);
	assert_true(busy > 0 && polite > 0 && stubborn > 0 && resur > 0 && resur_child > 0 &&
		    forker > 0 && spinner > 0 && sleeper > 0 && trusted > 0);

	assert_int_equal(qj_engine_quiesce_begin(t->e, 1, now_usec(CLOCK_MONOTONIC)), 0);
	assert_int_equal(qj_proc_timerslack_get(busy, &slack), 0);
	assert_true(slack == t->p->timer_slack_nsec);
	assert_int_equal(qj_proc_timerslack_get(trusted, &slack), 0);
	assert_true(slack != t->p->timer_slack_nsec);

	assert_int_equal(itest_steps(t, 30 * USEC_PER_SEC), 1);

	/* Nothing jailed runs. */
	assert_int_equal(qj_engine_counts(t->e, &c), 0);
	assert_int_equal(c.busy, 0);
	assert_true(c.stopped >= 2);
	{
		struct qj_cgroup *cg;

		assert_int_equal(qj_cgroup_new(t->cg_path, t->cpu_path, &cg), 0);
		assert_int_equal(qj_cgroup_app_pids(cg, NULL, &jailed, &n_jailed), 0);
		qj_cgroup_free(cg);
	}
	for (size_t i = 0; i < n_jailed; i++) {
		char s = itest_state(jailed[i]);

		struct qj_proc_status ps;

		print_message("jailed %d state %c\n", jailed[i], s ? s : '-');
		/* Runnable only to act on a SIGSTOP or SIGKILL: no code of its own. */
		if (s == 'R' && (pending(jailed[i], SIGSTOP) || pending(jailed[i], SIGKILL)))
			continue;
		(void)ps;
		assert_true(s != 'R');
	}
	free(jailed);
	assert_true(stopped_or_stopping(busy));
	assert_true(stopped_or_stopping(spinner));
	assert_int_equal(itest_state(polite), 'S');
	assert_int_equal(itest_state(sleeper), 'S');
	assert_true(dead_or_dying(stubborn));
	assert_true(dead_or_dying(resur));
	assert_true(itest_state(trusted) == 'R' || itest_state(trusted) == 'S');

	assert_int_equal(qj_engine_restore(t->e, "test"), 0);

	/* Restore: stopped tasks run, CPU class and timer slack are back. */
	assert_true(itest_state(busy) != 'T');
	assert_true(itest_state(spinner) != 'T');
	assert_true(itest_state(forker) != 'T');
	assert_int_equal(qj_proc_timerslack_get(busy, &slack), 0);
	assert_true(slack == 50000);

	/* Exactly the rungs each behaviour earns, from the kill log. */
	assert_log(t, busy, "SIGSTOP:blocked");
	assert_log(t, polite, "SIGXCPU:blocked");
	assert_log(t, stubborn, "SIGTERM:ignored,SIGKILL:killed");
	/*
	 * Its partner continues it within 10 ms: seen either before the stop was
	 * confirmed or after; either way SIGTERM follows for that reason.
	 */
	{
		char got[256];

		assert_true(itest_log_of(t, resur, got, sizeof(got)) >= 0);
		print_message("pid %d: %s\n", resur, got);
		assert_true(strcmp(got, "SIGSTOP:continued-by-other,SIGTERM:killed") == 0 ||
			    strcmp(got, "SIGSTOP:blocked,SIGTERM:killed") == 0);
		assert_int_equal(itest_log_count_reason(t, resur, "continued-by-other"), 1);
	}
	/*
	 * The forker, or the child it waits for, is stopped; nothing harder.  A
	 * child continued by the restore may finish its work and exit in time to
	 * be logged as followed (an exit record, status 0): not an action.
	 */
	assert_true(itest_log_count_app(t, "forker", "SIGSTOP") >= 1);
	assert_int_equal(itest_log_count_app(t, "forker", NULL) -
				 itest_log_count_app(t, "forker", "exit"),
			 itest_log_count_app(t, "forker", "SIGSTOP"));
	assert_log(t, spinner, "SIGSTOP:blocked");
	assert_log(t, sleeper, "");
	assert_log(t, resur_child, "");
	assert_log(t, trusted, "");
	assert_int_equal(itest_log_count(t, "summary"), 1);
	/* Every action is logged: the summary's count equals the records'. */
	{
		FILE *f = fopen(t->log_path, "re");
		char *buf = NULL;
		size_t cap = 0;
		json_t *last = NULL;

		assert_non_null(f);
		/* The cycle's summary; exits the resume brought may follow it. */
		while (getline(&buf, &cap, f) > 0) {
			json_t *rec = json_loads(buf, 0, NULL);

			if (strcmp(json_string_value(json_object_get(rec, "action")) ?: "",
				   "summary") == 0) {
				json_decref(last);
				last = rec;
			} else {
				json_decref(rec);
			}
		}
		fclose(f);
		free(buf);
		assert_non_null(last);
		assert_string_equal(json_string_value(json_object_get(last, "action")), "summary");
		assert_string_equal(json_string_value(json_object_get(last, "outcome")),
				    "quiesced");
		assert_int_equal(json_integer_value(json_object_get(last, "actions")),
				 itest_log_count(t, NULL));
		json_decref(last);
	}
}

/*
 * The old test apps on a loaded host, the jail at the idle CPU class: two busy
 * processes outside the jail (this test's own) keep both CPUs busy.  A task acted
 * on then waits, runnable, for a CPU to take its signal (polite's SIGXCPU handler,
 * a pending SIGSTOP): that wait is not its app's demand, and no app gets a group
 * rung.  On the engine that counted it, polite was stopped and terminated as a
 * group.
 */
static void test_quiesce_loaded_host(void **state)
{
	struct itest *t = *state;
	pid_t busy, polite, stubborn, spinner, sleeper, hog[2];

	ITEST_REQUIRE(t);
	t->p->cpu_idle = true;
	qj_test_policy_add_app(t->p, "busy");
	qj_test_policy_add_app(t->p, "polite")->notify = true;
	qj_test_policy_add_app(t->p, "stubborn")->start_rung = 2; /* sigterm */
	qj_test_policy_add_app(t->p, "spinner");
	qj_test_policy_add_app(t->p, "sleeper");
	assert_int_equal(itest_start_engine(t), 0);
	for (size_t i = 0; i < ARRAY_SIZE(hog); i++) {
		hog[i] = itest_spawn(t, "qj-busy", NULL, NULL, 0);
		assert_true(hog[i] > 0);
	}
	busy = itest_spawn(t, "qj-busy", "busy", NULL, 0);
	polite = itest_spawn(t, "qj-polite", "polite", NULL, 0);
	stubborn = itest_spawn(t, "qj-stubborn", "stubborn", NULL, 0);
	spinner = itest_spawn(t, "qj-spinner", "spinner", NULL, 0);
	sleeper = itest_spawn(t, "qj-sleeper", "sleeper", NULL, 0);
	assert_true(busy > 0 && polite > 0 && stubborn > 0 && spinner > 0 && sleeper > 0);
	wait_blocked(sleeper);

	assert_int_equal(qj_engine_quiesce_begin(t->e, 1, now_usec(CLOCK_MONOTONIC)), 0);
	assert_int_equal(itest_steps(t, 60 * USEC_PER_SEC), 1);
	/* Starved at the idle class beside the hogs, a stop may still be queued: it runs nothing. */
	assert_true(stopped_or_stopping(busy) && stopped_or_stopping(spinner));
	assert_int_equal(qj_engine_restore(t->e, "test"), 0);

	/* "blocked" once the stop took effect, "restored" when it was still queued (issue 25). */
	assert_log_stop(t, busy);
	assert_log(t, polite, "SIGXCPU:blocked");
	assert_log(t, stubborn, "SIGTERM:ignored,SIGKILL:killed");
	assert_log_stop(t, spinner);
	assert_log(t, sleeper, "");
	assert_log(t, hog[0], "");
	assert_log(t, hog[1], "");
	/* No group rung: every record is one of the task records above. */
	assert_int_equal(itest_log_count_app(t, "busy", NULL), 1);
	assert_int_equal(itest_log_count_app(t, "polite", NULL), 1);
	assert_int_equal(itest_log_count_app(t, "spinner", NULL), 1);
	assert_int_equal(itest_log_count_app(t, "stubborn", NULL), 2);
	assert_int_equal(itest_log_count_app(t, "sleeper", NULL), 0);
	assert_int_equal(itest_state(polite), 'S');
}

/*
 * 1,000 busy processes in one app: quiesced within the policy's own bound, each
 * stopped, and each action in the kill log.  Once the step that stopped them
 * re-read every task of the app after each stop (O(n^2) reads of
 * /proc/PID/status) and fsync'd one record at a time: 1,000 tasks took
 * 11.6-22.2 s against a bound of 5.4 s.
 */
static void test_quiesce_large_group(void **state)
{
	struct itest *t = *state;
	const unsigned n = 1000;
	uint64_t t0, took, bound;
	pid_t *pids = NULL;
	size_t k = 0;
	char dir[300], path[400], num[16];
	int r;

	ITEST_REQUIRE(t);
	t->p->cpu_idle = true; /* else 1,000 spinners starve the engine (docs/platform.md) */
	qj_test_policy_add_app(t->p, "herd");
	assert_int_equal(itest_start_engine(t), 0);
	snprintf(num, sizeof(num), "%u", n);
	assert_int_equal(setenv("QJ_HERD_N", num, 1), 0);
	assert_true(itest_spawn(t, "qj-herd", "herd", NULL, 0) > 0);
	snprintf(dir, sizeof(dir), "%s/herd", t->cg_path);
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	/* All forked (a minute at most on a loaded machine), then given a moment to spin. */
	for (int i = 0; i < 600 && k != n; i++) {
		free(pids);
		pids = NULL;
		assert_int_equal(qj_cgroup_read_pids(path, &pids, &k), 0);
		if (k != n)
			usleep(100 * 1000);
	}
	free(pids);
	assert_int_equal(k, n);
	usleep(200 * 1000);
	bound = qj_policy_quiesce_bound_usec(t->p);
	t0 = now_usec(CLOCK_MONOTONIC);
	r = itest_quiesce(t, 1, 2 * bound);
	took = now_usec(CLOCK_MONOTONIC) - t0;
	print_message("%u busy tasks quiesced: %d after %" PRIu64 " ms, the bound %" PRIu64
		      " ms (%.2f of it)\n",
		      n, r, took / 1000, bound / 1000, (double)took / (double)bound);
	assert_int_equal(r, 1);
	assert_true(took < bound);
	assert_int_equal(itest_log_count_app(t, "herd", "quiesce-timeout"), 0);
	assert_int_equal(qj_engine_restore(t->e, "test"), 0);
	/* One record per stop, none lost to the batched fsync. */
	assert_int_equal(itest_log_count_app(t, "herd", "SIGSTOP"), (int)n);
}

/*
 * A SIGSTOP still queued on a task the idle class starves (two CPU hogs beside
 * it) counts as stopped for the quiesce, but its record says "blocked" only once
 * the stop took effect ('T'): it was written while the stop was still pending.
 */
static void test_blocked_only_when_stopped(void **state)
{
	struct itest *t = *state;
	pid_t busy[3], hog[2];
	char got[256];
	int queued = 0;

	ITEST_REQUIRE(t);
	t->p->cpu_idle = true;
	qj_test_policy_add_app(t->p, "busy");
	assert_int_equal(itest_start_engine(t), 0);
	for (size_t i = 0; i < ARRAY_SIZE(hog); i++) {
		hog[i] = itest_spawn(t, "qj-busy", NULL, NULL, 0);
		assert_true(hog[i] > 0);
	}
	for (size_t i = 0; i < ARRAY_SIZE(busy); i++) {
		busy[i] = itest_spawn(t, "qj-busy", "busy", NULL, 0);
		assert_true(busy[i] > 0);
	}
	assert_int_equal(qj_engine_quiesce_begin(t->e, 1, now_usec(CLOCK_MONOTONIC)), 0);
	assert_int_equal(itest_steps(t, 60 * USEC_PER_SEC), 1);
	for (size_t i = 0; i < ARRAY_SIZE(busy); i++) {
		/* The log first: a stop taken after the last step is not in it yet. */
		assert_true(itest_log_of(t, busy[i], got, sizeof(got)) >= 0);
		queued += itest_state(busy[i]) != 'T';
		if (strcmp(got, "SIGSTOP:blocked") == 0 && itest_state(busy[i]) != 'T')
			fail_msg("%d logged blocked with its stop still queued", busy[i]);
		assert_true(strcmp(got, "") == 0 || strcmp(got, "SIGSTOP:blocked") == 0);
		assert_true(stopped_or_stopping(busy[i]));
	}
	print_message("stops still queued when the quiesce ended: %d of %zu\n", queued,
		      ARRAY_SIZE(busy));
	assert_int_equal(qj_engine_restore(t->e, "test"), 0);
	for (size_t i = 0; i < ARRAY_SIZE(busy); i++) {
		assert_true(itest_log_of(t, busy[i], got, sizeof(got)) >= 0);
		assert_true(strcmp(got, "SIGSTOP:blocked") == 0 ||
			    strcmp(got, "SIGSTOP:restored") == 0);
	}
}

/* QOS_NONE: idle CPU class and timer slack while quiescing, restored exactly. */
static void test_quiesce_qos_none(void **state)
{
	struct itest *t = *state;
	pid_t sleeper, busy;
	uint64_t slack;

	ITEST_REQUIRE(t);
	qj_test_policy_add_app(t->p, "sleeper");
	assert_int_equal(itest_start_engine(t), 0);
	sleeper = itest_spawn(t, "qj-sleeper", "sleeper", NULL, 0);
	busy = itest_spawn(t, "qj-busy", NULL, NULL, 0);
	assert_true(sleeper > 0 && busy > 0);
	assert_int_equal(qj_proc_timerslack_set(sleeper, 123456), 0);
	assert_int_equal(itest_read_ll(t->cpu_path, "cpu.idle"), 0);

	assert_int_equal(qj_engine_quiesce_begin(t->e, 7, now_usec(CLOCK_MONOTONIC)), 0);
	assert_int_equal(itest_read_ll(t->cpu_path, "cpu.idle"), 1);
	assert_int_equal(qj_proc_timerslack_get(sleeper, &slack), 0);
	assert_true(slack == t->p->timer_slack_nsec);
	assert_int_equal(qj_proc_timerslack_get(busy, &slack), 0);
	assert_true(slack == 50000); /* not jailed: untouched */
	assert_int_equal(itest_steps(t, 30 * USEC_PER_SEC), 1);
	assert_int_equal(qj_engine_restore(t->e, "test"), 0);

	assert_int_equal(itest_read_ll(t->cpu_path, "cpu.idle"), 0);
	assert_int_equal(qj_proc_timerslack_get(sleeper, &slack), 0);
	assert_true(slack == 123456);
	assert_int_equal(itest_log_count(t, NULL), 0);
	assert_int_equal(itest_log_count(t, "summary"), 1);
}

/*
 * A grace shorter than the sample window: after the notification the task is
 * unmeasured until the window ends, and the step must sleep until then rather
 * than look again at once in a loop.  Counts steps and the engine's CPU against the
 * number of windows the quiesce took.
 */
static void test_short_grace_no_step_loop(void **state)
{
	struct itest *t = *state;
	uint64_t start, end, next, cpu0, cpu1;
	unsigned steps = 0;
	struct timespec ts;
	pid_t polite;
	int r;

	ITEST_REQUIRE(t);
	t->p->cpu_idle = false;
	qj_test_policy_set_ladder(t->p,
				  (const enum qj_action[]){ QJ_ACTION_SIGXCPU, QJ_ACTION_SIGSTOP },
				  2, 20 * USEC_PER_MSEC);
	qj_test_policy_add_app(t->p, "polite")->notify = true; /* its policy consents */
	assert_int_equal(itest_start_engine(t), 0);
	polite = itest_spawn(t, "qj-polite", "polite", NULL, 0);
	assert_true(polite > 0);

	start = now_usec(CLOCK_MONOTONIC);
	cpu0 = now_usec(CLOCK_PROCESS_CPUTIME_ID);
	assert_int_equal(qj_engine_quiesce_begin(t->e, 1, start), 0);
	for (;;) {
		uint64_t now = now_usec(CLOCK_MONOTONIC);

		r = qj_engine_quiesce_step(t->e, now, &next);
		steps++;
		if (r != 0 || now > start + 30 * USEC_PER_SEC)
			break;
		ts.tv_sec = (time_t)(next / USEC_PER_SEC);
		ts.tv_nsec = (long)(next % USEC_PER_SEC * 1000);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	end = now_usec(CLOCK_MONOTONIC);
	cpu1 = now_usec(CLOCK_PROCESS_CPUTIME_ID);
	assert_int_equal(r, 1);
	assert_log(t, polite, "SIGXCPU:blocked");
	{
		uint64_t windows = (end - start) / t->p->sample_window_usec + 1;

		print_message("%u steps, %" PRIu64 " ms CPU in %" PRIu64 " ms (%" PRIu64
			      " windows)\n",
			      steps, (cpu1 - cpu0) / 1000, (end - start) / 1000, windows);
		/* A few steps per window (rung, confirmation, window end), not one per microsecond. */
		assert_true(steps <= 4 * windows + 4);
		assert_true(cpu1 - cpu0 < (end - start) / 4);
	}
	assert_int_equal(qj_engine_restore(t->e, "test"), 0);
}

/*
 * Leaves exactly one free file descriptor (RLIMIT_NOFILE at the highest open fd + 1,
 * holes filled with /dev/null): enough for the step's listing of the jail, not for
 * per-thread sampling.  Returns the filler fds (closed by fd_pressure_end()).
 */
static int fd_pressure_begin(int *fill, int max_fill, struct rlimit *old)
{
	struct rlimit rl;
	int n = 0, top = 0, fd;

	assert_int_equal(getrlimit(RLIMIT_NOFILE, old), 0);
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	close(fd);
	for (int i = 0; i < 4096; i++)
		if (fcntl(i, F_GETFD) >= 0)
			top = i;
	rl = *old;
	rl.rlim_cur = (rlim_t)top + 2; /* one fd above the highest: the spare */
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	while (n < max_fill && (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
		fill[n++] = fd;
	assert_true(n < max_fill);
	/* Free the highest one: one spare fd. */
	close(fill[--n]);
	return n;
}

static void fd_pressure_end(int *fill, int n, const struct rlimit *old)
{
	for (int i = 0; i < n; i++)
		close(fill[i]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, old), 0);
}

/*
 * Fail-closed sampling: when the daemon runs low on file descriptors, a busy
 * multi-threaded task's threads cannot be read.  The step must fail with the error,
 * not count the threads as idle and report a quiet jail.
 */
static void test_sampling_error_fails_step(void **state)
{
	struct itest *t = *state;
	int fill[4096], n;
	struct rlimit old;
	uint64_t next;
	pid_t spinner;
	int r;

	ITEST_REQUIRE(t);
	t->p->cpu_idle = false;
	t->p->busy_threshold = 0.2; /* busy even on a loaded machine */
	qj_test_policy_add_app(t->p, "spin");
	assert_int_equal(itest_start_engine(t), 0);
	spinner = itest_spawn(t, "qj-spinner", "spin", NULL, 0);
	assert_true(spinner > 0);
	assert_int_equal(qj_engine_quiesce_begin(t->e, 1, now_usec(CLOCK_MONOTONIC)), 0);
	usleep((useconds_t)t->p->sample_window_usec + 50 * 1000);

	n = fd_pressure_begin(fill, (int)ARRAY_SIZE(fill), &old);
	r = qj_engine_quiesce_step(t->e, now_usec(CLOCK_MONOTONIC), &next);
	fd_pressure_end(fill, n, &old);
	print_message("step under fd pressure: %d\n", r);
	assert_int_equal(r, -EMFILE);
	assert_int_equal(itest_state(spinner) == 'T', false); /* nothing done to it blindly */
	/* With descriptors back, the same cycle goes on and stops the spinner. */
	assert_int_equal(itest_steps(t, 30 * USEC_PER_SEC), 1);
	assert_true(stopped_or_stopping(spinner));
	assert_int_equal(qj_engine_restore(t->e, "test"), 0);
	/* Its record once the stop took effect, or at the restore if it was still queued. */
	assert_log_stop(t, spinner);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_quiesce_qos_none, setup, teardown),
		cmocka_unit_test_setup_teardown(test_quiesce_full_ladder, setup, teardown),
		cmocka_unit_test_setup_teardown(test_quiesce_loaded_host, setup, teardown),
		cmocka_unit_test_setup_teardown(test_short_grace_no_step_loop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sampling_error_fails_step, setup, teardown),
		cmocka_unit_test_setup_teardown(test_quiesce_large_group, setup, teardown),
		cmocka_unit_test_setup_teardown(test_blocked_only_when_stopped, setup, teardown),
	};

	if (getenv("QJ_TEST_FILTER")) /* e.g. QJ_TEST_FILTER='test_quiesce_loaded*' */
		cmocka_set_test_filter(getenv("QJ_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
