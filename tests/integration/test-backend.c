// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Power backends against a fake sysfs tree (policy suspend.sysfs); the host's
 * /sys/power is never touched.
 *
 * What a FIFO can honestly simulate: power/state as a FIFO blocks the
 * daemon's open-for-write until this test opens the other end, like the
 * patched kernel's "qos" write blocks until no QOS_EVENTUALLY constraint is
 * left; the daemon's signal interrupts that blocked open (EINTR), as it
 * interrupts the kernel's interruptible wait; reading "qos" from it completes
 * the write, as a suspend/resume does.  power/wakeup_count as a FIFO lets
 * the test play the kernel's counter: each read returns what the test writes
 * (a fresh FIFO is renamed into place per read, so two reads never share a pipe).
 * What it cannot: make write(2) itself fail with EBUSY or EINVAL; the cycle's
 * EBUSY backoff is covered by the unit tests (tests/unit/test-cycle.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon-harness.h"
#include "qosjail.h"

static const char policy_qos[] = "version: 1\n"
				 "suspend:\n"
				 "  backend: qos\n"
				 "  sysfs: @DIR@/sys\n"
				 "  idle_delay: 1h\n"
				 "  retry: { initial: 1h, max: 1h }\n";

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

static void path_of(struct harness *h, const char *name, char *buf, size_t size)
{
	snprintf(buf, size, "%s/sys/power/%s", h->dir, name);
}

/* The fake tree must exist before the daemon resolves "auto": build it in a pre-made dir. */
static int start_with(struct harness *h, const char *policy, bool state_fifo, bool count_fifo,
		      const char *state_text)
{
	char p[512];
	int r = harness_start(h, policy);

	if (r < 0)
		return r;
	snprintf(p, sizeof(p), "%s/sys", h->dir);
	(void)mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/sys/power", h->dir);
	(void)mkdir(p, 0755);
	path_of(h, "state", p, sizeof(p));
	if (state_fifo ? mkfifo(p, 0600) < 0 : 0)
		return -errno;
	if (!state_fifo) {
		FILE *f = fopen(p, "we");

		if (!f)
			return -errno;
		fputs(state_text ? state_text : "", f);
		fclose(f);
	}
	path_of(h, "wakeup_count", p, sizeof(p));
	if (count_fifo && mkfifo(p, 0600) < 0)
		return -errno;
	return 0;
}

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

/* Opens @path for reading (waiting up to 5 s for a writer) and reads it to EOF. */
static int fifo_read(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	size_t n = 0;

	if (fd < 0)
		return -errno;
	for (int waited = 0; waited < 5000;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t k;

		if (poll(&pfd, 1, 10) == 0) {
			waited += 10;
			continue;
		}
		k = read(fd, buf + n, size - 1 - n);
		if (k > 0) {
			n += (size_t)k;
			continue;
		}
		if (k == 0 && n > 0)
			break;
		if (k < 0 && errno != EAGAIN)
			break;
		msleep(1);
		waited++;
	}
	buf[n] = '\0';
	close(fd);
	return (int)n;
}

/*
 * Plays one read of a kernel attribute: waits up to 5 s for a reader of the
 * FIFO @path, puts a fresh FIFO in its place (so the daemon's next open
 * cannot join this pipe before we closed it), then writes @text and closes.
 */
static int fifo_write(const char *path, const char *text)
{
	char fresh[600];

	snprintf(fresh, sizeof(fresh), "%s.next", path);
	for (int i = 0; i < 5000; i++) {
		int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);

		if (fd >= 0) {
			ssize_t k;

			if (mkfifo(fresh, 0600) < 0 || rename(fresh, path) < 0) {
				close(fd);
				return -errno;
			}
			k = write(fd, text, strlen(text));
			close(fd);
			return k == (ssize_t)strlen(text) ? 0 : -EIO;
		}
		if (errno != ENXIO)
			return -errno;
		msleep(1);
	}
	return -ETIMEDOUT;
}

static void test_qos_blocks_until_kernel_and_hold_interrupts(void **state)
{
	struct harness h;
	struct qj_conn *c = NULL, *holder = NULL;
	char p[512], buf[64], err[64];
	json_t *j;

	(void)state;
	assert_int_equal(start_with(&h, policy_qos, true, false, NULL), 0);
	path_of(&h, "state", p, sizeof(p));
	assert_int_equal(qj_open(h.socket, &c), 0);

	/* The write blocks: the "kernel" still has QOS_EVENTUALLY constraints. */
	assert_int_equal(qj_suspend(c), 0);
	assert_true(harness_wait_state(&h, "suspending", 5000));
	msleep(300);
	assert_true(harness_wait_state(&h, "suspending", 0));

	/* A new hold interrupts the blocked write (EINTR) and restores. */
	assert_int_equal(qj_open(h.socket, &holder), 0);
	assert_int_equal(qj_hold(holder, "call", "incoming call", 0, 0), 0);
	assert_true(harness_wait_state(&h, "awake", 5000));
	assert_string_equal(last_result(&h, err, sizeof(err)), "interrupted");
	assert_string_equal(err, "EINTR");
	assert_int_equal(qj_release(holder, "call"), 0);

	/* Next attempt: the "kernel" lets it through (suspend + resume). */
	assert_int_equal(qj_suspend(c), 0);
	assert_true(harness_wait_state(&h, "suspending", 5000));
	assert_int_equal(fifo_read(p, buf, sizeof(buf)), 3);
	assert_string_equal(buf, "qos");
	assert_true(harness_wait_int(&h, "suspends", 1, 5000) == 1);
	assert_true(harness_wait_state(&h, "idle-wait", 5000));
	assert_string_equal(last_result(&h, err, sizeof(err)), "suspended");
	j = harness_status(&h);
	assert_int_equal(json_integer_value(json_object_get(j, "aborts")), 1);
	assert_int_equal(json_integer_value(json_object_get(j, "failures")), 0);
	json_decref(j);

	qj_close(holder);
	qj_close(c);
	assert_int_equal(harness_stop(&h), 0);
	harness_cleanup(&h);
}

struct count_script {
	char count_path[512];
	const char *reads[2]; /* what the kernel's counter says on each read */
	bool expect_writeback;
	char written[64];
};

static void *play_wakeup_count(void *arg)
{
	struct count_script *s = arg;

	for (size_t i = 0; i < 2; i++)
		if (fifo_write(s->count_path, s->reads[i]) < 0)
			return NULL;
	if (s->expect_writeback)
		(void)fifo_read(s->count_path, s->written, sizeof(s->written));
	return NULL;
}

static void read_file(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	size_t n = f ? fread(buf, 1, size - 1, f) : 0;

	buf[n] = '\0';
	if (f)
		fclose(f);
}

static void test_wakeup_count_success(void **state)
{
	struct count_script s = { .reads = { "42\n", "42\n" }, .expect_writeback = true };
	struct harness h;
	struct qj_conn *c = NULL;
	char p[512], buf[64], err[64];
	pthread_t t;

	(void)state;
	assert_int_equal(start_with(&h, policy_wakeup_count, false, true, ""), 0);
	path_of(&h, "wakeup_count", s.count_path, sizeof(s.count_path));
	assert_int_equal(pthread_create(&t, NULL, play_wakeup_count, &s), 0);
	assert_int_equal(qj_open(h.socket, &c), 0);
	assert_int_equal(qj_suspend(c), 0);
	if (harness_wait_int(&h, "suspends", 1, 5000) != 1) {
		json_t *j = harness_status(&h);
		char *text = json_dumps(j, 0);

		harness_dump_log(&h);
		fail_msg("no suspend: %s", text);
	}
	pthread_join(t, NULL);
	assert_string_equal(s.written, "42"); /* the count read before quiescing, written back */
	path_of(&h, "state", p, sizeof(p));
	read_file(p, buf, sizeof(buf));
	assert_string_equal(buf, "mem");
	assert_string_equal(last_result(&h, err, sizeof(err)), "suspended");
	qj_close(c);
	assert_int_equal(harness_stop(&h), 0);
	harness_cleanup(&h);
}

static void test_wakeup_count_mismatch_aborts(void **state)
{
	struct count_script s = { .reads = { "42\n", "43\n" } };
	struct harness h;
	struct qj_conn *c = NULL;
	char p[512], buf[64], err[64];
	pthread_t t;
	json_t *j;

	(void)state;
	assert_int_equal(start_with(&h, policy_wakeup_count, false, true, ""), 0);
	path_of(&h, "wakeup_count", s.count_path, sizeof(s.count_path));
	assert_int_equal(pthread_create(&t, NULL, play_wakeup_count, &s), 0);
	assert_int_equal(qj_open(h.socket, &c), 0);
	assert_int_equal(qj_suspend(c), 0);
	assert_true(harness_wait_int(&h, "failures", 1, 5000) == 1);
	pthread_join(t, NULL);
	assert_string_equal(last_result(&h, err, sizeof(err)), "failed");
	assert_string_equal(err, "ESTALE");
	j = harness_status(&h);
	assert_int_equal(json_integer_value(json_object_get(j, "wakeup_count_mismatches")), 1);
	assert_int_equal(json_integer_value(json_object_get(j, "suspends")), 0);
	assert_string_equal(json_string_value(json_object_get(j, "state")), "idle-wait");
	json_decref(j);
	path_of(&h, "state", p, sizeof(p));
	read_file(p, buf, sizeof(buf));
	assert_string_equal(buf, ""); /* never wrote the state */
	qj_close(c);
	assert_int_equal(harness_stop(&h), 0);
	harness_cleanup(&h);
}

static void test_auto_picks_backend(void **state)
{
	struct harness h;
	char p[512];
	FILE *f;
	json_t *j;

	(void)state;
	/* No fake tree yet when it starts: auto falls back to wakeup-count. */
	assert_int_equal(harness_start(&h, policy_auto), 0);
	j = harness_status(&h);
	assert_string_equal(json_string_value(json_object_get(j, "backend")), "wakeup-count");
	json_decref(j);
	/* A kernel listing "qos": a reload re-resolves auto. */
	snprintf(p, sizeof(p), "%s/sys", h.dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/sys/power", h.dir);
	mkdir(p, 0755);
	path_of(&h, "state", p, sizeof(p));
	f = fopen(p, "we");
	assert_non_null(f);
	fputs("freeze mem qos\n", f);
	fclose(f);
	{
		struct qj_conn *c = NULL;

		assert_int_equal(qj_open(h.socket, &c), 0);
		assert_int_equal(qj_reload(c, NULL), 0);
		qj_close(c);
	}
	j = harness_status(&h);
	assert_string_equal(json_string_value(json_object_get(j, "backend")), "qos");
	json_decref(j);
	assert_int_equal(harness_stop(&h), 0);
	harness_cleanup(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_qos_blocks_until_kernel_and_hold_interrupts),
		cmocka_unit_test(test_wakeup_count_success),
		cmocka_unit_test(test_wakeup_count_mismatch_aborts),
		cmocka_unit_test(test_auto_picks_backend),
	};

	if (geteuid() != 0) {
		if (getenv("CI") && strcmp(getenv("CI"), "true") == 0) {
			fprintf(stderr, "integration/backend needs root (CI=true: failing)\n");
			return 1;
		}
		fprintf(stderr, "integration/backend needs root, skipped\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
