// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target for the policy parser.  Beyond "no crash, no leak, no UB" it checks the
 * parser's contract: failure is -EINVAL with 1..QJ_POLICY_MAX_DIAGS diagnostics and *ret
 * untouched; success dumps JSON that parses back to the same dump.  Build and run with
 * tests/fuzz/run.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *dump(const struct qj_policy *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (!m || qj_policy_dump_json(p, m) < 0)
		abort();
	fclose(m);
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct qj_policy *sentinel = (struct qj_policy *)&sentinel, *p = sentinel, *again = NULL;
	struct qj_diags d = {};
	char *a, *b;
	FILE *null;
	int r;

	r = qj_policy_parse("fuzz.yaml", (const char *)data, size, &d, &p);
	if (r == -ENOMEM)
		abort();
	if (r < 0) {
		if (r != -EINVAL || p != sentinel || d.n == 0 || d.n > QJ_POLICY_MAX_DIAGS)
			abort();
		null = fopen("/dev/null", "we");
		if (null) {
			qj_diags_print(&d, null);
			fclose(null);
		}
		qj_diags_done(&d);
		return 0;
	}
	if (d.n != 0)
		abort();
	qj_diags_done(&d);

	(void)qj_policy_match(p, "/usr/lib/firefox/firefox", "firefox -contentproc", 1000);
	(void)qj_policy_find_app(p, "browser");
	a = dump(p);
	if (qj_policy_parse("dump.json", a, strlen(a), &d, &again) != 0) {
		qj_diags_print(&d, stderr);
		fprintf(stderr, "dump does not parse back:\n%s\n", a);
		abort();
	}
	b = dump(again);
	if (strcmp(a, b) != 0) {
		fprintf(stderr, "dump changed:\n%s\n---\n%s\n", a, b);
		abort();
	}
	free(a);
	free(b);
	qj_diags_done(&d);
	qj_policy_free(again);
	qj_policy_free(p);
	return 0;
}
