// SPDX-License-Identifier: LGPL-2.1-or-later
/* qosjailctl log on a fixture kill log: filters, --limit, --json, usage errors. */
#include <getopt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "ctl.h"

static char *run(int expect_exit, const char *a1, const char *a2, const char *a3, const char *a4)
{
	char fixture[512], out[] = "/tmp/qj-ctl-log-XXXXXX";
	const char *src = getenv("QJ_SOURCE_DIR");
	char *argv[] = { "log",	     "--file",	 fixture,    (char *)a1,
			 (char *)a2, (char *)a3, (char *)a4, NULL };
	int argc = 3, saved, fd;
	char *text = calloc(1, 65536);

	while (argc < 7 && argv[argc])
		argc++;
	snprintf(fixture, sizeof(fixture), "%s/tests/fixtures/kill.log", src ? src : ".");
	fd = mkstemp(out);
	assert_true(fd >= 0);
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	dup2(fd, STDOUT_FILENO);
	optind = 0;
	assert_int_equal(ctl_log(argc, argv, NULL), expect_exit);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	assert_true(pread(fd, text, 65535, 0) >= 0);
	close(fd);
	unlink(out);
	return text;
}

static void test_ctl_log_table_and_filters(void **state)
{
	char *s;

	(void)state;
	s = run(CTL_EXIT_OK, NULL, NULL, NULL, NULL);
	assert_non_null(strstr(s, "TIME"));
	assert_non_null(strstr(s, "qj-busy"));
	assert_non_null(strstr(s, "254/300 ms"));
	assert_non_null(strstr(s, "summary"));
	assert_non_null(
		strstr(s, "gap       2 records lost (ENOSPC) from 2026-12-03T09:05:42.200Z"));
	free(s);

	/* Another user's comm and reason cannot recolour the table or forge a row. */
	s = run(CTL_EXIT_OK, "--app", "evil", NULL, NULL);
	assert_null(strchr(s, '\x1b'));
	assert_null(strchr(s, '\r'));
	assert_non_null(strstr(s, "\\e[31mred\\rfake"));
	assert_non_null(strstr(s, "busy\\n2026-12-03"));
	assert_null(strstr(s, "\n2026-12-03 09:05:42 1      root"));
	/* Two lines: the header and the record. */
	{
		int lines = 0;

		for (const char *p = s; *p; p++)
			lines += *p == '\n';
		assert_int_equal(lines, 2);
	}
	free(s);

	s = run(CTL_EXIT_OK, "--app", "polite", NULL, NULL);
	assert_non_null(strstr(s, "qj-polite"));
	assert_null(strstr(s, "qj-busy"));
	free(s);

	s = run(CTL_EXIT_OK, "--pid", "100", "--json", NULL);
	assert_string_equal(s, "{\"ts\":\"2026-12-03T09:05:41.123Z\",\"cycle\":1,\"app\":\"busy\","
			       "\"pid\":100,\"comm\":\"qj-busy\",\"exe\":\"/x/qj-busy\",\"uid\":0,"
			       "\"cgroup\":\"/j/busy\",\"action\":\"sigstop\",\"rung\":1,"
			       "\"rung_name\":\"sigstop\",\"reason\":\"busy\",\"cpu_ms\":254,"
			       "\"window_ms\":300,\"outcome\":\"blocked\",\"strikes\":1}\n");
	free(s);

	s = run(CTL_EXIT_OK, "--limit", "1", "--json", NULL);
	assert_non_null(strstr(s, "\"action\":\"summary\""));
	assert_null(strstr(s, "qj-busy"));
	free(s);

	s = run(CTL_EXIT_OK, "--since", "2026-12-03T09:05:42Z", "--action", "sigxcpu");
	assert_non_null(strstr(s, "qj-polite"));
	assert_null(strstr(s, "summary"));
	free(s);
	/* The spelling users see now finds the old log's lowercase records. */
	s = run(CTL_EXIT_OK, "--since", "2026-12-03T09:05:42Z", "--action", "SIGXCPU");
	assert_non_null(strstr(s, "qj-polite"));
	free(s);

	s = run(CTL_EXIT_OK, "--cycle", "2", NULL, NULL);
	assert_null(strstr(s, "qj-"));
	free(s);

	s = run(CTL_EXIT_INVALID, "--since", "yesterday", NULL, NULL);
	free(s);
	s = run(CTL_EXIT_INVALID, "--pid", "x", NULL, NULL);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ctl_log_table_and_filters),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
