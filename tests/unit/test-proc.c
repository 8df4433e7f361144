// SPDX-License-Identifier: LGPL-2.1-or-later
/* /proc parsers on fixture text, busy classification, exec matching. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "fileio.h"
#include "proc.h"
#include "procmon.h"
#include "sampler.h"
#include "test-policy.h"
#include "util.h"
#include "waiters.h"

static void test_proc_stat_parse_odd_comm(void **state)
{
	const char *text = "4242 (a) (b c) T 1 4242 4242 0 -1 4194560 100 0 0 0 "
			   "17 3 5 7 20 0 3 0 123456 1000 100 18446744073709551615\n";
	struct qj_proc_stat st;

	(void)state;
	assert_int_equal(qj_proc_stat_parse(text, &st), 0);
	assert_string_equal(st.comm, "a) (b c");
	assert_int_equal(st.state, 'T');
	assert_int_equal(st.ppid, 1);
	assert_true(st.utime == 17 && st.stime == 3 && st.cutime == 5 && st.cstime == 7);
	assert_int_equal(st.num_threads, 3);
	assert_true(st.start_time == 123456);
	assert_int_equal(qj_proc_stat_parse("4242 (x R 1", &st), -EINVAL);
}

static void test_proc_status_parse(void **state)
{
	const char *text = "Name:\tqj-polite\nUid:\t1000\t1000\t1000\t1000\n"
			   "SigPnd:\t0000000000000000\nShdPnd:\t0000000000040000\n"
			   "SigIgn:\t0000000000000000\nSigCgt:\t0000000000800000\n"
			   "voluntary_ctxt_switches:\t42\nnonvoluntary_ctxt_switches:\t7\n";
	struct qj_proc_status st;

	(void)state;
	assert_int_equal(qj_proc_status_parse(text, &st), 0);
	assert_int_equal(st.uid, 1000);
	assert_true(st.sigcgt & (1ULL << (24 - 1))); /* SIGXCPU */
	assert_true(st.shdpnd & (1ULL << (19 - 1))); /* SIGSTOP pending */
	assert_true(st.voluntary_switches == 42);
	assert_int_equal(qj_proc_status_parse("Name:\tx\n", &st), -EINVAL);
}

static void test_proc_schedstat_parse(void **state)
{
	uint64_t cpu, wait, slices;

	(void)state;
	assert_int_equal(qj_proc_schedstat_parse("318893528 339352841 87\n", &cpu, &wait, &slices),
			 0);
	assert_true(cpu == 318893528ULL && wait == 339352841ULL && slices == 87);
	assert_int_equal(qj_proc_schedstat_parse("x", &cpu, &wait, &slices), -EINVAL);
}

static void test_sample_is_busy(void **state)
{
	(void)state;
	/* 300 ms window, threshold half a CPU: 150 ms of demand is the line. */
	assert_false(qj_sample_is_busy(150 * 1000 * 1000ULL, 300 * 1000, 0.5));
	assert_true(qj_sample_is_busy(151 * 1000 * 1000ULL, 300 * 1000, 0.5));
	assert_false(qj_sample_is_busy(0, 0, 0.5));
}

/* Writes @text as DIR/schedstat (NULL: removes it). */
static void put_schedstat(const char *dir, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/schedstat", dir);
	(void)unlink(path);
	if (!text)
		return;
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

/*
 * A kernel without schedstat (no CONFIG_SCHED_INFO) made every task look gone,
 * and one that reads "0 0 0" (sched_info off) every task idle: the daemon must
 * refuse to start on either, not pass a spinning jail as quiet.
 */
static void test_sample_check(void **state)
{
	char dir[] = "/tmp/qj-test-proc-XXXXXX";

	(void)state;
	assert_non_null(mkdtemp(dir));
	put_schedstat(dir, NULL);
	assert_int_equal(qj_sample_check(dir), -EOPNOTSUPP);
	put_schedstat(dir, "0 0 0\n");
	assert_int_equal(qj_sample_check(dir), -EOPNOTSUPP);
	put_schedstat(dir, "garbage\n");
	assert_int_equal(qj_sample_check(dir), -EINVAL);
	put_schedstat(dir, "318893528 339352841 87\n");
	assert_int_equal(qj_sample_check(dir), 0);
	put_schedstat(dir, NULL);
	assert_int_equal(rmdir(dir), 0);
	/* This process has run: the kernel the tests run on has it. */
	assert_int_equal(qj_sample_check("/proc/self"), 0);
}

/*
 * A daemon checks its own schedstat first thing after exec: a task that has not blocked
 * since it started shows 0 run time (the kernel adds it up when the task blocks or at a
 * tick), and the daemon refused to start at random (issue 25: most of 300 fresh
 * processes read 0 on a loaded machine).
 */
static void test_sample_check_fresh_process(void **state)
{
	(void)state;
	for (int i = 0; i < 50; i++) {
		pid_t pid = fork();
		int status;

		assert_true(pid >= 0);
		if (pid == 0) {
			execl("/proc/self/exe", "test-proc", "--sample-check", (char *)NULL);
			_exit(127);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
}

static void test_demand_delta(void **state)
{
	struct qj_demand a = {
		.cpu_ns = 100, .wait_ns = 1000, .children_ns = 5, .voluntary = 3, .slices = 10
	};
	struct qj_demand spinner = {
		.cpu_ns = 110, .wait_ns = 1900, .children_ns = 5, .voluntary = 3, .slices = 12
	};
	struct qj_demand sleeper = {
		.cpu_ns = 110, .wait_ns = 1900, .children_ns = 5, .voluntary = 9, .slices = 16
	};
	struct qj_demand starved = {
		.cpu_ns = 100, .wait_ns = 1900, .children_ns = 5, .voluntary = 3, .slices = 10
	};
	struct qj_demand forker = {
		.cpu_ns = 101, .wait_ns = 1000, .children_ns = 505, .voluntary = 90, .slices = 99
	};

	(void)state;
	/* A starved spinner waited without ever blocking: the wait counts. */
	assert_true(qj_demand_delta_ns(&a, &spinner) == 910);
	/* A sleeper waiting behind spinners blocked by itself: only its CPU. */
	assert_true(qj_demand_delta_ns(&a, &sleeper) == 10);
	/* Woken, then never given the CPU: no evidence it would not block. */
	assert_true(qj_demand_delta_ns(&a, &starved) == 0);
	/* A forker is as busy as the children it reaps. */
	assert_true(qj_demand_delta_ns(&a, &forker) == 501);

	/* Starved windows: unknown, or judged by history before any action. */
	starved.runnable = true;
	starved.runnable_spinner = true;
	assert_int_equal(qj_demand_classify(&a, &starved, 300, 0.5, false), QJ_TASK_UNKNOWN);
	assert_int_equal(qj_demand_classify(&a, &starved, 300, 0.5, true), QJ_TASK_BUSY);
	starved.runnable_spinner = false;
	assert_int_equal(qj_demand_classify(&a, &starved, 300, 0.5, true), QJ_TASK_IDLE);
	assert_int_equal(qj_demand_classify(&a, &sleeper, 300, 0.5, false), QJ_TASK_IDLE);

	/* Runnable at both ends and never blocked: busy on any CPU share. */
	a.runnable = true;
	spinner.runnable = true;
	assert_int_equal(qj_demand_classify(&a, &spinner, 300 * 1000, 0.5, false), QJ_TASK_BUSY);
	/* Blocked in between (woke again at the end): by its demand. */
	sleeper.runnable = true;
	assert_int_equal(qj_demand_classify(&a, &sleeper, 300 * 1000, 0.5, false), QJ_TASK_IDLE);
}

static void test_procmon_match(void **state)
{
	struct qj_policy *p = qj_test_policy_new(USEC_PER_SEC);
	struct qj_app *a;

	(void)state;
	qj_test_policy_add_app(p, "placed-only");
	a = qj_test_policy_add_app(p, "game");
	a->match_exe = strdup("/usr/games/*");
	a = qj_test_policy_add_app(p, "bob-browser");
	a->match_cmdline = strdup("*browser --profile*");
	a->has_match_uid = true;
	a->match_uid = 1001;

	assert_null(qj_policy_match(p, "/usr/bin/true", "true", 0));
	assert_string_equal(qj_policy_match(p, "/usr/games/tetris", "tetris", 0)->name, "game");
	assert_string_equal(
		qj_policy_match(p, "/usr/bin/browser", "browser --profile x", 1001)->name,
		"bob-browser");
	assert_null(qj_policy_match(p, "/usr/bin/browser", "browser --profile x", 1000));
	qj_policy_free(p);
}

/* The cmdline is read only when it decides whether (or where) a process is jailed. */
static void test_policy_match_without_cmdline(void **state)
{
	struct qj_policy *p = qj_test_policy_new(USEC_PER_SEC);
	bool needs = true;
	struct qj_app *a;

	(void)state;
	a = qj_test_policy_add_app(p, "trusted-tool");
	a->match_exe = strdup("/usr/bin/tool");
	a->match_cmdline = strdup("*--safe*");
	a->trust = QJ_TRUST_TRUSTED;
	a = qj_test_policy_add_app(p, "content");
	a->match_exe = strdup("/usr/lib/browser/*");
	a->match_cmdline = strdup("*contentproc*");
	a = qj_test_policy_add_app(p, "browser");
	a->match_exe = strdup("/usr/lib/browser/*");
	a = qj_test_policy_add_app(p, "tool");
	a->match_exe = strdup("/usr/bin/tool");
	a->trust = QJ_TRUST_TRUSTED;

	/* No app's exe: no read, no app. */
	assert_null(qj_policy_match_without_cmdline(p, "/usr/bin/true", 0, &needs));
	assert_false(needs);
	/* Two jailed apps the cmdline chooses between: read; unreadable goes to the first. */
	assert_string_equal(
		qj_policy_match_without_cmdline(p, "/usr/lib/browser/b", 0, &needs)->name,
		"content");
	assert_true(needs);
	/* Trusted whatever the cmdline: no read. */
	assert_string_equal(qj_policy_match_without_cmdline(p, "/usr/bin/tool", 0, &needs)->name,
			    "tool");
	assert_false(needs);
	qj_policy_free(p);
}

struct lock_seen {
	pid_t waiter[8], holder[8];
	char lock[8][96];
	size_t n;
};

static int on_lock(pid_t waiter, pid_t holder, const char *lock, void *userdata)
{
	struct lock_seen *s = userdata;

	s->waiter[s->n] = waiter;
	s->holder[s->n] = holder;
	snprintf(s->lock[s->n++], sizeof(s->lock[0]), "%s", lock);
	return 0;
}

/* /proc/locks: waiters ("->", deeper ones indented) belong to the lock numbered above them. */
static void test_locks_parse(void **state)
{
	static const char text[] = "1: POSIX  ADVISORY  WRITE 100 08:01:1234 0 EOF\n"
				   "1: -> POSIX  ADVISORY  WRITE 101 08:01:1234 0 EOF\n"
				   "1:  -> POSIX  ADVISORY  WRITE 102 08:01:1234 0 EOF\n"
				   "2: FLOCK  ADVISORY  WRITE 200 fe:00:99 0 EOF\n"
				   "3: OFDLCK ADVISORY  READ  -1 00:2f:5 0 EOF\n"
				   "3: -> OFDLCK ADVISORY  WRITE -1 00:2f:5 0 EOF\n"
				   "4: FLOCK  ADVISORY  WRITE 400 fe:00:7 0 EOF\n"
				   "4: -> FLOCK  ADVISORY  WRITE 401 fe:00:7 0 EOF\n"
				   "garbage\n";
	struct lock_seen s = {};

	(void)state;
	assert_int_equal(qj_locks_parse(text, on_lock, &s), 0);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.waiter[0], 101);
	assert_int_equal(s.holder[0], 100);
	assert_int_equal(s.waiter[1], 102); /* behind 101, waiting for 100 all the same */
	assert_int_equal(s.holder[1], 100);
	assert_string_equal(s.lock[0], "POSIX WRITE lock on 08:01:1234");
	assert_int_equal(s.waiter[2], 401);
	assert_int_equal(s.holder[2], 400);
	assert_string_equal(s.lock[2], "FLOCK WRITE lock on fe:00:7");
}

/*
 * qj_read_record_file() reads a per-process /proc file whole with one read, and any
 * longer file (one that fills the buffer) to its end.
 */
static void test_read_record_file(void **state)
{
	char path[] = "/tmp/qj-record-XXXXXX", big[10000];
	_cleanup_free_ char *status = NULL, *text = NULL;
	int fd;

	(void)state;
	assert_int_equal(qj_read_record_file("/proc/self/status", &status), 0);
	assert_non_null(strstr(status, "Name:\t"));
	assert_non_null(strstr(status, "\nnonvoluntary_ctxt_switches:\t"));
	assert_int_equal(status[strlen(status) - 1], '\n');
	memset(big, 'x', sizeof(big));
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, big, sizeof(big)), (ssize_t)sizeof(big));
	assert_int_equal(close(fd), 0);
	assert_int_equal(qj_read_record_file(path, &text), 0);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(strlen(text), sizeof(big));
}

/* A knob's integer read back exactly; junk, empty or overflowing is an error, never 0. */
static void test_int64_file(void **state)
{
	static const char *const bad[] = { "",	      "\n",    "max\n",
					   "12abc\n", "1 2\n", "99999999999999999999\n" };
	char path[] = "/tmp/qj-knob-XXXXXX";
	int64_t v = 0;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(close(fd), 0);
	assert_int_equal(qj_write_int64_file(path, -9223372036854775807LL - 1), 0);
	assert_int_equal(qj_read_int64_file(path, &v), 0);
	assert_true(v == INT64_MIN);
	/* Kernel knobs need no truncation; a regular file does. */
	assert_int_equal(truncate(path, 0), 0);
	assert_int_equal(qj_write_int64_file(path, 10000), 0);
	assert_int_equal(qj_read_int64_file(path, &v), 0);
	assert_true(v == 10000);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		FILE *f = fopen(path, "w");

		assert_non_null(f);
		assert_true(fputs(bad[i], f) >= 0);
		assert_int_equal(fclose(f), 0);
		v = 42;
		assert_int_equal(qj_read_int64_file(path, &v), -EBADMSG);
		assert_true(v == 42);
	}
	assert_int_equal(unlink(path), 0);
	assert_int_equal(qj_read_int64_file(path, &v), -ENOENT);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proc_stat_parse_odd_comm),
		cmocka_unit_test(test_proc_status_parse),
		cmocka_unit_test(test_proc_schedstat_parse),
		cmocka_unit_test(test_sample_is_busy),
		cmocka_unit_test(test_sample_check),
		cmocka_unit_test(test_sample_check_fresh_process),
		cmocka_unit_test(test_demand_delta),
		cmocka_unit_test(test_procmon_match),
		cmocka_unit_test(test_policy_match_without_cmdline),
		cmocka_unit_test(test_locks_parse),
		cmocka_unit_test(test_read_record_file),
		cmocka_unit_test(test_int64_file),
	};

	if (argc == 2 && strcmp(argv[1], "--sample-check") == 0)
		return qj_sample_check("/proc/self") == 0 ? 0 : 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
