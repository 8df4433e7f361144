// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * bench/day (issue 29): the timeline page of a power manager that is not qosjail, in
 * the page format of qosjailctl report --html (the same drawing code), from that
 * manager's own records as bench/day.py wrote them: RECORDS has one kill-log
 * style record a line (a "summary" per suspend: ts its end, window_ms its length),
 * HISTORY the hold periods ({"periods": [{"name", "start_usec", "end_usec"}]}: the
 * wake locks and what the trusted programs needed) and "stats", the hold statistics
 * bench/day.py derived from them (the fields of qj_holds()): the page's "Hold
 * statistics" table, which would otherwise say the daemon did not answer.
 *
 *   bench-day-page RECORDS HISTORY SINCE_USEC NOW_USEC OUT.html
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl-report-html.h"

static json_t *read_lines(const char *path)
{
	json_t *a = json_array();
	char line[8192];
	FILE *f = fopen(path, "re");

	if (!f || !a) {
		json_decref(a);
		if (f)
			fclose(f);
		return NULL;
	}
	while (fgets(line, sizeof(line), f)) {
		json_t *rec = json_loads(line, 0, NULL);

		if (rec)
			json_array_append_new(a, rec);
	}
	fclose(f);
	return a;
}

int main(int argc, char **argv)
{
	struct ctl_report_data d = {};
	json_error_t err;
	FILE *out;
	int r;

	if (argc != 6) {
		fprintf(stderr, "usage: bench-day-page RECORDS HISTORY SINCE_USEC NOW_USEC OUT\n");
		return 2;
	}
	d.records = read_lines(argv[1]);
	d.history = json_load_file(argv[2], 0, &err);
	d.since_usec = strtoull(argv[3], NULL, 10);
	d.now_usec = strtoull(argv[4], NULL, 10);
	if (!d.records || !d.history) {
		fprintf(stderr, "bench-day-page: cannot read %s or %s\n", argv[1], argv[2]);
		return 1;
	}
	if (!json_is_array(json_object_get(d.history, "stats"))) {
		fprintf(stderr, "bench-day-page: %s has no hold \"stats\"\n", argv[2]);
		return 1;
	}
	d.holds = d.history; /* {"stats": [...]}, as the page reads qj_holds()'s answer */
	out = fopen(argv[5], "we");
	if (!out) {
		fprintf(stderr, "bench-day-page: %s: %s\n", argv[5], strerror(errno));
		return 1;
	}
	r = ctl_report_html(out, &d);
	if (fclose(out) != 0 && r >= 0)
		r = -errno;
	json_decref(d.records);
	json_decref(d.history);
	if (r < 0) {
		fprintf(stderr, "bench-day-page: %s: %s\n", argv[5], strerror(-r));
		return 1;
	}
	printf("%s: %zu cycles, %zu hold periods\n", argv[5], d.n_cycles, d.n_hold_periods);
	return 0;
}
