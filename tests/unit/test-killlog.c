// SPDX-License-Identifier: LGPL-2.1-or-later
/* Kill log: records round-trip, filters, size rotation, RFC3339. */
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

#include "killlog.h"
#include "util.h"

struct fixture {
	char dir[64];
	char path[96];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	snprintf(f->dir, sizeof(f->dir), "/tmp/qj-killlog-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/sub/kill.log", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static struct qj_kill_record rec(uint64_t cycle, const char *app, pid_t pid, const char *action)
{
	return (struct qj_kill_record){
		.ts_usec = 1764752741123456ULL + cycle * USEC_PER_SEC,
		.cycle = cycle,
		.app = app,
		.pid = pid,
		.comm = "qj-busy",
		.exe = "/usr/bin/qj-busy",
		.uid = 1000,
		.cgroup = "/qosjail/app",
		.action = action,
		.rung = 1,
		.rung_name = action,
		.reason = "busy",
		.cpu_ms = 290,
		.window_ms = 300,
		.outcome = "blocked",
		.strikes = 1,
	};
}

struct collect {
	json_t *recs[16];
	int n;
};

static int collect_cb(json_t *r, void *userdata)
{
	struct collect *c = userdata;

	if (c->n < 16)
		c->recs[c->n++] = json_incref(r);
	return 0;
}

static int read_all(const char *path, const struct qj_killlog_filter *flt, struct collect *c)
{
	FILE *f = fopen(path, "re");
	int r;

	assert_non_null(f);
	r = qj_killlog_read(f, flt, collect_cb, c);
	fclose(f);
	return r;
}

static void collect_done(struct collect *c)
{
	for (int i = 0; i < c->n; i++)
		json_decref(c->recs[i]);
	c->n = 0;
}

static void test_killlog_append_read_filter(void **state)
{
	struct fixture *f = *state;
	struct qj_killlog *l = NULL;
	struct collect c = {};
	struct qj_kill_record r;
	json_t *sum;
	FILE *fp;

	assert_int_equal(qj_killlog_open(f->path, 0, 3, &l), 0);
	r = rec(1, "busy", 100, "sigstop");
	assert_int_equal(qj_killlog_append(l, &r), 0);
	r = rec(1, "polite", 101, "sigxcpu");
	assert_int_equal(qj_killlog_append(l, &r), 0);
	r = rec(2, "busy", 102, "sigkill");
	r.comm = NULL;
	assert_int_equal(qj_killlog_append(l, &r), 0);
	sum = json_pack("{s:I,s:s,s:i}", "cycle", (json_int_t)2, "action", "summary", "killed", 1);
	assert_int_equal(qj_killlog_append_json(l, sum), 0);
	json_decref(sum);
	l = qj_killlog_free(l);

	assert_int_equal(read_all(f->path, NULL, &c), 4);
	assert_string_equal(json_string_value(json_object_get(c.recs[0], "ts")),
			    "2025-12-03T09:05:42.123Z");
	assert_string_equal(json_string_value(json_object_get(c.recs[1], "action")), "sigxcpu");
	assert_int_equal(json_integer_value(json_object_get(c.recs[0], "cpu_ms")), 290);
	assert_true(json_is_null(json_object_get(c.recs[2], "comm")));
	assert_non_null(json_object_get(c.recs[3], "ts"));
	collect_done(&c);

	assert_int_equal(read_all(f->path, &(struct qj_killlog_filter){ .app = "busy" }, &c), 2);
	collect_done(&c);
	assert_int_equal(read_all(f->path, &(struct qj_killlog_filter){ .pid = 101 }, &c), 1);
	collect_done(&c);
	assert_int_equal(read_all(f->path,
				  &(struct qj_killlog_filter){ .has_cycle = true, .cycle = 2 }, &c),
			 2);
	collect_done(&c);
	assert_int_equal(read_all(f->path, &(struct qj_killlog_filter){ .action = "sigkill" }, &c),
			 1);
	collect_done(&c);
	assert_int_equal(read_all(f->path,
				  &(struct qj_killlog_filter){ .since_usec = 1764752742500000ULL },
				  &c),
			 2);
	collect_done(&c);

	/* A torn last line is left for the next read. */
	fp = fopen(f->path, "ae");
	fputs("{\"cycle\": 9", fp);
	fclose(fp);
	assert_int_equal(read_all(f->path, NULL, &c), 4);
	collect_done(&c);
}

static void test_killlog_rotation(void **state)
{
	struct fixture *f = *state;
	struct qj_killlog *l = NULL;
	struct collect c = {};
	char p[128];
	struct stat st;

	assert_int_equal(qj_killlog_open(f->path, 600, 2, &l), 0);
	for (int i = 0; i < 20; i++) {
		struct qj_kill_record r = rec((uint64_t)i, "busy", 100 + i, "sigstop");

		assert_int_equal(qj_killlog_append(l, &r), 0);
		assert_int_equal(stat(f->path, &st), 0);
		assert_true(st.st_size <= 600);
	}
	l = qj_killlog_free(l);
	snprintf(p, sizeof(p), "%s.1", f->path);
	assert_int_equal(stat(p, &st), 0);
	snprintf(p, sizeof(p), "%s.2", f->path);
	assert_int_equal(stat(p, &st), 0);
	snprintf(p, sizeof(p), "%s.3", f->path);
	assert_int_equal(stat(p, &st), -1);
	/* The newest record is in the live file. */
	assert_true(read_all(f->path, &(struct qj_killlog_filter){ .pid = 119 }, &c) == 1);
	collect_done(&c);
}

static void test_rfc3339(void **state)
{
	char buf[32];
	uint64_t t;

	(void)state;
	assert_int_equal(qj_format_rfc3339(0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "1970-01-01T00:00:00.000Z");
	assert_int_equal(qj_parse_rfc3339("2025-12-03T09:05:42.123Z", &t), 0);
	assert_true(t == 1764752742123000ULL);
	assert_int_equal(qj_parse_rfc3339("2025-12-03T10:05:42+01:00", &t), 0);
	assert_true(t == 1764752742000000ULL);
	assert_int_equal(qj_parse_rfc3339("2025-12-03 10:05:42", &t), -EINVAL);
	assert_int_equal(qj_parse_rfc3339("2025-12-03T10:05:42Zjunk", &t), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_killlog_append_read_filter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_killlog_rotation, setup, teardown),
		cmocka_unit_test(test_rfc3339),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
