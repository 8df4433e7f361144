// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Log lines are for people: the code location is never in the message text.  It goes to
 * the journal as CODE_FILE/CODE_LINE fields, and to stderr only at debug level; either
 * way relative to the source tree, never the build machine's absolute path.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <cmocka.h>

#include "log.h"

#define THIS_FILE "tests/unit/test-log-paths.c"

/* What one log call wrote to stderr. */
static void capture_stderr(int level, int max_level, char *buf, size_t size, int *ret_line)
{
	char path[] = "/tmp/qj-log-paths-XXXXXX";
	int fd = mkstemp(path), saved = dup(STDERR_FILENO);
	ssize_t n;

	assert_true(fd >= 0 && saved >= 0);
	(void)unlink(path);
	fflush(stderr);
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	qj_log_open("t", true, max_level);
	*ret_line = __LINE__ + 1;
	log_full_errno(level, 0, "hello %d", 7);
	fflush(stderr);
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	n = pread(fd, buf, size - 1, 0);
	assert_true(n >= 0);
	buf[n] = '\0';
	close(fd);
}

static void test_log_stderr_info_has_no_location(void **state)
{
	char buf[512];
	int line;

	(void)state;
	capture_stderr(LOG_INFO, LOG_INFO, buf, sizeof(buf), &line);
	assert_string_equal(buf, "t: hello 7\n");
}

static void test_log_stderr_debug_location_is_relative(void **state)
{
	char buf[512], want[512];
	int line;

	(void)state;
	capture_stderr(LOG_INFO, LOG_DEBUG, buf, sizeof(buf), &line);
	snprintf(want, sizeof(want), "t: hello 7 (" THIS_FILE ":%d)\n", line);
	assert_string_equal(buf, want);
}

static void test_log_journal_fields(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char buf[2048], want[128];
	int fd, line;
	ssize_t n;

	(void)state;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/qj-log-paths-%d.sock", getpid());
	(void)unlink(sa.sun_path);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(qj_log_open_journal("t", sa.sun_path, LOG_INFO), 0);
	line = __LINE__ + 1;
	log_notice("pid %d (%s) stopped", 42, "comm");
	n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
	(void)unlink(sa.sun_path);
	close(fd);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_non_null(strstr(buf, "MESSAGE=pid 42 (comm) stopped\n"));
	assert_non_null(strstr(buf, "PRIORITY=5\n"));
	assert_non_null(strstr(buf, "SYSLOG_IDENTIFIER=t\n"));
	assert_non_null(strstr(buf, "CODE_FILE=" THIS_FILE "\n"));
	snprintf(want, sizeof(want), "CODE_LINE=%d\n", line);
	assert_non_null(strstr(buf, want));
	qj_log_open("t", true, LOG_INFO);
}

/* No object of the daemon carries an absolute path of the source tree in its strings. */
static void test_log_no_source_dir_in_binary(void **state)
{
	const char *src = getenv("QJ_SOURCE_DIR");
	char needle[4096];
	FILE *f;
	char *data = NULL;
	size_t size = 0, len;

	(void)state;
#ifdef __SANITIZE_ADDRESS__
	/* ASan's metadata of globals names each object by its absolute source path. */
	print_message("skipped: the ASan build's own metadata holds source paths\n");
	skip();
#endif
	if (!src)
		skip();
	len = (size_t)snprintf(needle, sizeof(needle), "%s/controller/", src);
	f = fopen("/proc/self/exe", "re");
	assert_non_null(f);
	for (;;) {
		char *d = realloc(data, size + (1 << 20));
		size_t got;

		assert_non_null(d);
		data = d;
		got = fread(data + size, 1, 1 << 20, f);
		size += got;
		if (got == 0)
			break;
	}
	fclose(f);
	assert_null(memmem(data, size, needle, len));
	free(data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log_stderr_info_has_no_location),
		cmocka_unit_test(test_log_stderr_debug_location_is_relative),
		cmocka_unit_test(test_log_journal_fields),
		cmocka_unit_test(test_log_no_source_dir_in_binary),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
