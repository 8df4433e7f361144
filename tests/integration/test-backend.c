// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Power backends of a real qosjaild against a fake /sys/power (policy
 * suspend.sysfs); the host's /sys/power is never touched.
 *
 * The fake (tests/support/fake-sysfs.c) is a FUSE filesystem served by a
 * thread of this test process, so power/state behaves like the patched
 * kernel's: a write of "qos" returns at once (a suspend that resumed), fails
 * with ERANGE (an incompatible latency constraint), or blocks until this test
 * releases it or the writer is signalled, which the kernel forwards as a
 * FUSE interrupt and the fake answers with EINTR, as the kernel's
 * interruptible wait does.  power/wakeup_count returns the counter this test
 * sets and refuses a write-back of another value with EINVAL.  Every write is
 * recorded with its result, so the tests assert exact sequences:
 *
 *   ERANGE twice: the cycle retries after the policy's doubling backoff,
 *     logs each refusal, and status tells the last result;
 *   a hold while the write blocks: the daemon interrupts it (EINTR), the
 *     cycle ends "interrupted" and the jail is restored (stopped task
 *     continued, cpu.idle back);
 *   wakeup-count: the count read before quiescing is written back before
 *     "mem"; a wakeup event between the read and the write-back makes the
 *     kernel refuse it (EINVAL) and the cycle fails without writing the state.
 *
 * Needs root and /dev/fuse: skipped without (exit 77), failed under CI=true.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon-harness.h"
#include "fake-sysfs.h"
#include "itest.h"
#include "qosjail.h"
#include "util.h"

#define RETRY_INITIAL_MSEC 200

static const char policy_ebusy[] = "version: 1\n"
				   "suspend:\n"
				   "  backend: qos\n"
				   "  sysfs: @DIR@/sys\n"
				   "  idle_delay: 1h\n"
				   "  retry: { initial: 200ms, max: 1s }\n";

static const char policy_jail_qos[] = "version: 1\n"
				      "suspend:\n"
				      "  backend: qos\n"
				      "  sysfs: @DIR@/sys\n"
				      "  idle_delay: 1h\n"
				      "  retry: { initial: 1h, max: 1h }\n"
				      "jail:\n"
				      "  cgroup: @CG@\n"
				      "  cpu_cgroup: @CPU@\n"
				      "  busy_threshold: 20%\n"
				      "  sample_window: 300ms\n"
				      "escalation:\n"
				      "  ladder:\n"
				      "    - { action: SIGSTOP, grace: 1h }\n"
				      "apps:\n"
				      "  - name: busy\n"
				      "    match: { exe: \"/nonexistent/busy\" }\n";

static const char policy_wakeup_count[] = "version: 1\n"
					  "suspend:\n"
					  "  backend: wakeup-count\n"
					  "  sysfs: @DIR@/sys\n"
					  "  state: mem\n"
					  "  idle_delay: 1h\n"
					  "  retry: { initial: 1h, max: 1h }\n";

static const char policy_auto[] = "version: 1\n"
				  "suspend:\n"
				  "  backend: auto\n"
				  "  sysfs: @DIR@/sys\n"
				  "  idle_delay: 1h\n";

struct fixture {
	struct harness h;
	bool started; /* harness_start() was called: h needs cleaning up */
	struct fake_sysfs *fs;
	char mnt[320]; /* where the fake is mounted, "" when not */
	struct qj_conn *c, *holder; /* closed by teardown, also after a failure */
	pid_t busy; /* spawned test app, killed by teardown */
};

static int setup(void **state)
{
	*state = calloc(1, sizeof(struct fixture));
	return *state ? 0 : -1;
}

/*
 * Stops the fake first (a write still blocked gets EIO, so a daemon whose
 * interrupt went wrong cannot hang the teardown), then the daemon, and checks
 * that nothing stays mounted, even after a failure.
 */
static int teardown(void **state)
{
	struct fixture *fx = *state;
	int status = 0, r;
	bool mounted;

	r = fake_sysfs_stop(fx->fs);
	if (r < 0)
		fprintf(stderr, "fake_sysfs_stop: %s\n", strerror(-r));
	mounted = fx->mnt[0] && fake_sysfs_mounted(fx->mnt);
	if (mounted)
		fprintf(stderr, "%s still mounted after the test\n", fx->mnt);
	if (fx->started && fx->h.pid > 0) {
		status = harness_stop(&fx->h);
		if (status != 0) {
			fprintf(stderr, "qosjaild exited with %d\n", status);
			harness_dump_log(&fx->h);
		}
	}
	qj_close(fx->holder);
	qj_close(fx->c);
	if (fx->busy > 0) {
		(void)kill(fx->busy, SIGKILL);
		(void)waitpid(fx->busy, NULL, 0);
	}
	if (fx->started)
		harness_cleanup(&fx->h);
	free(fx);
	return status == 0 && r == 0 && !mounted ? 0 : -1;
}

/* Starts the daemon on @policy and, with @fake, mounts the fake on @DIR@/sys. */
static void start(struct fixture *fx, const char *policy, bool fake)
{
	int r;

	fx->started = true;
	r = harness_start(&fx->h, policy);
	if (r < 0) {
		harness_dump_log(&fx->h);
		fail_msg("qosjaild did not start: %s", strerror(-r));
	}
	if (!fake)
		return;
	snprintf(fx->mnt, sizeof(fx->mnt), "%s/sys", fx->h.dir);
	assert_int_equal(mkdir(fx->mnt, 0755), 0);
	r = fake_sysfs_start(fx->mnt, &fx->fs);
	if (r < 0) {
		fx->mnt[0] = '\0';
		fail_msg("fake sysfs: %s", strerror(-r));
	}
}

static const char *writes(struct fixture *fx)
{
	static char buf[1024];

	(void)fake_sysfs_writes(fx->fs, buf, sizeof(buf));
	return buf;
}

/* The daemon's last cycle result; its error name (or "") into @error. */
static const char *last_result(struct harness *h, char *error, size_t size)
{
	static char result[64];
	json_t *j = harness_status(h), *last = json_object_get(j, "last");
	const char *e = json_string_value(json_object_get(last, "error"));

	snprintf(result, sizeof(result), "%s", json_string_value(json_object_get(last, "result")));
	snprintf(error, size, "%s", e ? e : "");
	json_decref(j);
	return result;
}

static long long status_int(struct harness *h, const char *key)
{
	json_t *j = harness_status(h);
	long long v = j ? (long long)json_integer_value(json_object_get(j, key)) : -1;

	json_decref(j);
	return v;
}

/* Occurrences of @text in the daemon's log. */
static int log_count(struct harness *h, const char *text)
{
	static char buf[1 << 20];
	FILE *f = fopen(h->log, "re");
	size_t n;
	int count = 0;

	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	for (const char *p = buf; (p = strstr(p, text)); p += strlen(text))
		count++;
	return count;
}

static void wait_blocked_or_fail(struct fixture *fx, int timeout_ms)
{
	if (fake_sysfs_wait_blocked(fx->fs, timeout_ms) < 0) {
		harness_dump_log(&fx->h);
		fail_msg("no blocked state write; writes so far: \"%s\"", writes(fx));
	}
}

static void test_qos_ebusy_retries_with_backoff(void **state)
{
	struct fixture *fx = *state;
	struct fake_sysfs_write w[3];
	char err[64];
	json_t *j;

	start(fx, policy_ebusy, true);
	/* Two refusals (an incompatible latency constraint), then a write that waits. */
	assert_int_equal(fake_sysfs_queue_state(fx->fs, FAKE_SYSFS_ERANGE), 0);
	assert_int_equal(fake_sysfs_queue_state(fx->fs, FAKE_SYSFS_ERANGE), 0);
	fake_sysfs_set_state_mode(fx->fs, FAKE_SYSFS_BLOCK);
	assert_int_equal(qj_open(fx->h.socket, &fx->c), 0);
	assert_int_equal(qj_suspend(fx->c), 0);
	wait_blocked_or_fail(fx, 30000);
	assert_string_equal(writes(fx), "qos:ERANGE,qos:ERANGE");

	/* While the third attempt waits in the kernel, status tells of the last refusal. */
	j = harness_status(&fx->h);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "state")), "suspending");
	assert_int_equal(json_integer_value(json_object_get(j, "failures")), 2);
	assert_int_equal(json_integer_value(json_object_get(j, "suspends")), 0);
	/* ...and the backoff it took: retry.initial doubled once. */
	assert_int_equal(json_integer_value(json_object_get(j, "retry_usec")),
			 2 * RETRY_INITIAL_MSEC * USEC_PER_MSEC);
	json_decref(j);
	assert_string_equal(last_result(&fx->h, err, sizeof(err)), "failed");
	assert_string_equal(err, "ERANGE");

	/* The kernel lets it through: suspended and resumed. */
	assert_int_equal(fake_sysfs_release_blocked(fx->fs), 0);
	assert_int_equal(fake_sysfs_wait_writes(fx->fs, 3, 5000), 3);
	assert_int_equal(harness_wait_int(&fx->h, "suspends", 1, 5000), 1);
	assert_true(harness_wait_state(&fx->h, "idle-wait", 5000));
	assert_string_equal(writes(fx), "qos:ERANGE,qos:ERANGE,qos:OK");
	assert_string_equal(last_result(&fx->h, err, sizeof(err)), "suspended");
	assert_string_equal(err, "");
	assert_int_equal(status_int(&fx->h, "failures"), 2);
	assert_int_equal(status_int(&fx->h, "retry_usec"), 0); /* a suspend ends the backoff */

	/*
	 * Each retry came no sooner than the backoff after the refusal it answers,
	 * and the backoff doubled (200 ms, then 400 ms).  No upper bound: the
	 * machine may be loaded.
	 */
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(fake_sysfs_write_at(fx->fs, i, &w[i]), 0);
	print_message("retry gaps: %llu ms, %llu ms\n",
		      (unsigned long long)(w[1].start_usec - w[0].end_usec) / USEC_PER_MSEC,
		      (unsigned long long)(w[2].start_usec - w[1].end_usec) / USEC_PER_MSEC);
	assert_true(w[1].start_usec - w[0].end_usec >= RETRY_INITIAL_MSEC * USEC_PER_MSEC);
	assert_true(w[2].start_usec - w[1].end_usec >= 2 * RETRY_INITIAL_MSEC * USEC_PER_MSEC);

	/* One warning per refusal, where the operator reads it. */
	assert_int_equal(log_count(&fx->h, "latency constraint is active (ERANGE), retrying with "
					   "backoff"),
			 2);
}

static void app_path(const char *app, char *buf, size_t size)
{
	snprintf(buf, size, "%s/tests/apps/qj-%s", getenv("QJ_BUILD_DIR"), app);
}

static char wait_not_stopped(pid_t pid, int timeout_ms)
{
	char st = itest_state(pid);

	for (int i = 0; i < timeout_ms / 10 && st == 'T'; i++) {
		msleep(10);
		st = itest_state(pid);
	}
	return st;
}

static void test_qos_blocked_write_interrupted_by_hold(void **state)
{
	struct fixture *fx = *state;
	char exe[512], err[64], st;
	char *argv[] = { exe, NULL };
	pid_t pid;
	json_t *j;

	start(fx, policy_jail_qos, true);
	fake_sysfs_set_state_mode(fx->fs, FAKE_SYSFS_BLOCK);
	assert_int_equal(qj_open(fx->h.socket, &fx->c), 0);
	app_path("busy", exe, sizeof(exe));
	assert_int_equal(qj_spawn(fx->c, "busy", argv, &pid, NULL), 0);
	fx->busy = pid;
	assert_int_equal(qj_suspend(fx->c), 0);

	/* The kernel still has QOS_EVENTUALLY constraints: the write waits, the jail quiesced. */
	wait_blocked_or_fail(fx, 30000);
	if (!itest_stopped_or_stopping(pid)) {
		harness_dump_log(&fx->h);
		fail_msg("suspend write started with busy task %d in state %c", pid,
			 itest_state(pid));
	}
	assert_int_equal(itest_read_ll(fx->h.it->cpu_path, "cpu.idle"), 1);
	assert_true(harness_wait_state(&fx->h, "suspending", 0));

	/* A hold: the daemon signals its worker, the kernel forwards it as a FUSE interrupt. */
	assert_int_equal(qj_open(fx->h.socket, &fx->holder), 0);
	assert_int_equal(qj_hold(fx->holder, "call", "incoming call", 0, 0), 0);
	if (fake_sysfs_wait_writes(fx->fs, 1, 5000) != 1) {
		harness_dump_log(&fx->h);
		fail_msg("the blocked write was not interrupted");
	}
	assert_string_equal(writes(fx), "qos:EINTR");
	assert_true(harness_wait_state(&fx->h, "awake", 5000));
	assert_string_equal(last_result(&fx->h, err, sizeof(err)), "interrupted");
	assert_string_equal(err, "EINTR");
	j = harness_status(&fx->h);
	assert_int_equal(json_integer_value(json_object_get(j, "aborts")), 1);
	assert_int_equal(json_integer_value(json_object_get(j, "failures")), 0);
	assert_int_equal(json_integer_value(json_object_get(j, "suspends")), 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "jail"), "stopped")),
			 0);
	json_decref(j);
	/* The jail is restored: the stopped task runs again, the group left the idle class. */
	st = wait_not_stopped(pid, 2000);
	assert_true(st == 'R' || st == 'S');
	assert_int_equal(itest_read_ll(fx->h.it->cpu_path, "cpu.idle"), 0);

	/* Hold released, the next attempt goes through. */
	fake_sysfs_set_state_mode(fx->fs, FAKE_SYSFS_SUSPEND);
	assert_int_equal(qj_release(fx->holder, "call"), 0);
	assert_int_equal(qj_suspend(fx->c), 0);
	assert_int_equal(harness_wait_int(&fx->h, "suspends", 1, 30000), 1);
	assert_string_equal(writes(fx), "qos:EINTR,qos:OK");
	assert_string_equal(last_result(&fx->h, err, sizeof(err)), "suspended");
	st = wait_not_stopped(pid, 2000);
	assert_true(st == 'R' || st == 'S');
}

static void test_wakeup_count_success(void **state)
{
	struct fixture *fx = *state;
	char err[64];

	start(fx, policy_wakeup_count, true);
	fake_sysfs_set_wakeup_count(fx->fs, 42);
	assert_int_equal(qj_open(fx->h.socket, &fx->c), 0);
	assert_int_equal(qj_suspend(fx->c), 0);
	if (harness_wait_int(&fx->h, "suspends", 1, 10000) != 1) {
		harness_dump_log(&fx->h);
		fail_msg("no suspend; writes: \"%s\"", writes(fx));
	}
	/* The count read before quiescing, written back, then the sleep state. */
	assert_string_equal(writes(fx), "wakeup_count=42:OK,mem:OK");
	assert_string_equal(last_result(&fx->h, err, sizeof(err)), "suspended");
	assert_int_equal(status_int(&fx->h, "wakeup_count_mismatches"), 0);
}

static void test_wakeup_count_event_before_writeback_aborts(void **state)
{
	struct fixture *fx = *state;
	char err[64];
	json_t *j;

	start(fx, policy_wakeup_count, true);
	fake_sysfs_set_wakeup_count(fx->fs, 42);
	/*
	 * Reads: before the quiesce (42), the worker's check (42); a wakeup event
	 * right after it, so the kernel refuses the write-back of 42.
	 */
	fake_sysfs_wakeup_after_reads(fx->fs, 2);
	assert_int_equal(qj_open(fx->h.socket, &fx->c), 0);
	assert_int_equal(qj_suspend(fx->c), 0);
	if (harness_wait_int(&fx->h, "failures", 1, 10000) != 1) {
		harness_dump_log(&fx->h);
		fail_msg("no failure; writes: \"%s\"", writes(fx));
	}
	assert_string_equal(writes(fx), "wakeup_count=42:EINVAL"); /* never wrote the state */
	assert_string_equal(last_result(&fx->h, err, sizeof(err)), "failed");
	assert_string_equal(err, "ESTALE");
	j = harness_status(&fx->h);
	assert_int_equal(json_integer_value(json_object_get(j, "wakeup_count_mismatches")), 1);
	assert_int_equal(json_integer_value(json_object_get(j, "suspends")), 0);
	assert_string_equal(json_string_value(json_object_get(j, "state")), "idle-wait");
	json_decref(j);
}

static void test_auto_picks_backend(void **state)
{
	struct fixture *fx = *state;
	json_t *j;

	/* No fake tree yet when it starts: auto falls back to wakeup-count. */
	start(fx, policy_auto, false);
	j = harness_status(&fx->h);
	assert_string_equal(json_string_value(json_object_get(j, "backend")), "wakeup-count");
	json_decref(j);
	/* A kernel listing "qos" in power/state: a reload re-resolves auto. */
	snprintf(fx->mnt, sizeof(fx->mnt), "%s/sys", fx->h.dir);
	assert_int_equal(mkdir(fx->mnt, 0755), 0);
	assert_int_equal(fake_sysfs_start(fx->mnt, &fx->fs), 0);
	assert_int_equal(qj_open(fx->h.socket, &fx->c), 0);
	assert_int_equal(qj_reload(fx->c, NULL), 0);
	j = harness_status(&fx->h);
	assert_string_equal(json_string_value(json_object_get(j, "backend")), "qos");
	json_decref(j);
	assert_string_equal(writes(fx), ""); /* resolving only reads */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_qos_ebusy_retries_with_backoff, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_qos_blocked_write_interrupted_by_hold, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_wakeup_count_success, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wakeup_count_event_before_writeback_aborts,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_auto_picks_backend, setup, teardown),
	};
	const char *missing = NULL;

	if (geteuid() != 0)
		missing = "root";
	else if (access("/dev/fuse", R_OK | W_OK) < 0)
		missing = "/dev/fuse";
	if (missing) {
		if (getenv("CI") && strcmp(getenv("CI"), "true") == 0) {
			fprintf(stderr, "integration/backend needs %s (CI=true: failing)\n",
				missing);
			return 1;
		}
		fprintf(stderr, "integration/backend needs %s, skipped\n", missing);
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
