// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * qosjailctl report --html from records and a hold history made here, as a machine
 * that really suspends writes them: wall-clock stamps that run ahead of the daemon's
 * CLOCK_MONOTONIC by every sleep (issue 29).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl-report-html.h"
#include "rfc3339.h"

static char *render(struct ctl_report_data *d)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(ctl_report_html(f, d), 0);
	assert_int_equal(fclose(f), 0);
	return text;
}

static uint64_t at(const char *ts)
{
	uint64_t t = 0;

	assert_int_equal(qj_parse_rfc3339(ts, &t), 0);
	return t;
}

/*
 * A cycle that quiesced for 300 ms, then slept 30 s: its summary's window_ms (monotonic)
 * is about 1 s, its ts the end.  The page must draw it from its begin, 31 s before.
 */
static void test_cycle_that_slept_is_drawn_from_its_begin(void **state)
{
	struct ctl_report_data d = { .now_usec = at("2026-12-05T10:01:00.000Z") };
	char *html;

	(void)state;
	d.records = json_pack("[{s:s,s:i,s:s,s:s,s:s,s:i,s:i,s:i,s:i,s:i,s:s}]", "ts",
			      "2026-12-05T10:00:31.000Z", "cycle", 7, "action", "summary", "reason",
			      "suspended", "outcome", "quiesced", "quiesce_ms", 300, "window_ms",
			      1000, "actions", 1, "stopped", 1, "killed", 0, "begin_ts",
			      "2026-12-05T10:00:00.000Z");
	assert_non_null(d.records);
	html = render(&d);
	assert_int_equal(d.n_cycles, 1);
	/* The cycles table: began, and the whole cycle's length. */
	if (!strstr(html, "<td>7</td><td>2026-12-05T10:00:00.000Z</td>"))
		fail_msg("cycle 7 not drawn from its begin:\n%s", strstr(html, "<h2>Cycles"));
	assert_non_null(strstr(html, "<td>300ms</td><td>31.0s</td>"));
	free(html);
	json_decref(d.records);
}

/* A summary from before begin_ts existed: the window, as before. */
static void test_cycle_without_begin_ts_uses_the_window(void **state)
{
	struct ctl_report_data d = { .now_usec = at("2026-12-05T10:01:00.000Z") };
	char *html;

	(void)state;
	d.records = json_pack("[{s:s,s:i,s:s,s:s,s:s,s:i,s:i}]", "ts", "2026-12-05T10:00:31.000Z",
			      "cycle", 7, "action", "summary", "reason", "suspended", "outcome",
			      "quiesced", "quiesce_ms", 300, "window_ms", 1000);
	html = render(&d);
	assert_non_null(strstr(html, "<td>7</td><td>2026-12-05T10:00:30.000Z</td>"));
	free(html);
	json_decref(d.records);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cycle_that_slept_is_drawn_from_its_begin),
		cmocka_unit_test(test_cycle_without_begin_ts_uses_the_window),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
