// SPDX-License-Identifier: LGPL-2.1-or-later
/* Kill log: records round-trip, filters, size rotation, RFC3339. */
#include <errno.h>
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

#include "dirwalk.h"
#include "killlog-read.h"
#include "killlog.h"
#include "rfc3339.h"
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
	/* The record says "sigkill" as logs before the signal spelling did: SIGKILL finds it. */
	assert_int_equal(read_all(f->path, &(struct qj_killlog_filter){ .action = "SIGKILL" }, &c),
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

/*
 * Deferred sync (one fsync a quiesce step): every record is in the file as soon
 * as it is appended, a rotation while records wait keeps them all, and
 * qj_killlog_sync() and qj_killlog_free() end the deferral with nothing lost.
 */
static void test_killlog_deferred_sync(void **state)
{
	struct fixture *f = *state;
	struct qj_killlog *l = NULL;
	struct qj_killlog_stats ks;
	struct collect c = {};
	char p[128];
	int n = 0;

	assert_int_equal(qj_killlog_open(f->path, 1500, 3, &l), 0);
	qj_killlog_defer_sync(l);
	for (int i = 0; i < 8; i++) {
		struct qj_kill_record r = rec(1, "busy", 100 + i, "sigstop");

		assert_int_equal(qj_killlog_append(l, &r), 0);
		/* Written at once: a reader (and a daemon restarted after a crash) sees it. */
		assert_int_equal(
			read_all(f->path, &(struct qj_killlog_filter){ .pid = 100 + i }, &c), 1);
		collect_done(&c);
	}
	assert_int_equal(qj_killlog_sync(l), 0);
	qj_killlog_get_stats(l, &ks);
	assert_int_equal(ks.lost, 0);
	qj_killlog_defer_sync(l);
	{
		struct qj_kill_record r = rec(2, "busy", 200, "sigstop");

		assert_int_equal(qj_killlog_append(l, &r), 0);
	}
	l = qj_killlog_free(l); /* syncs what waits */
	/* All nine, across the live file and its rotations. */
	n += read_all(f->path, NULL, &c);
	collect_done(&c);
	for (int k = 1; k <= 3; k++) {
		snprintf(p, sizeof(p), "%s.%d", f->path, k);
		if (access(p, F_OK) == 0) {
			n += read_all(p, NULL, &c);
			collect_done(&c);
		}
	}
	assert_int_equal(n, 9);
	snprintf(p, sizeof(p), "%s.1", f->path);
	assert_int_equal(access(p, F_OK), 0); /* it did rotate while records waited */
}

static void write_secret(const struct fixture *f, char *secret, size_t size)
{
	FILE *s;

	snprintf(secret, size, "%s/secret", f->dir);
	s = fopen(secret, "w");
	assert_non_null(s);
	fputs("root:secret\n", s);
	assert_int_equal(fclose(s), 0);
}

static off_t size_of(const char *path)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	return st.st_size;
}

static void make_sub(const struct fixture *f, mode_t mode)
{
	char sub[96];

	snprintf(sub, sizeof(sub), "%s/sub", f->dir);
	assert_int_equal(mkdir(sub, mode), 0);
	assert_int_equal(chmod(sub, mode), 0);
}

/* A symlink in the log's place, or in place of its directory, is refused. */
static void test_killlog_refuses_symlinks(void **state)
{
	struct fixture *f = *state;
	struct qj_killlog *l = NULL;
	char secret[96], sub[96], real[96];

	write_secret(f, secret, sizeof(secret));
	make_sub(f, 0750);
	assert_int_equal(symlink(secret, f->path), 0);
	assert_int_equal(qj_killlog_open(f->path, 0, 0, &l), -ELOOP);
	assert_null(l);
	assert_int_equal(size_of(secret), 12);

	/* The directory itself a symlink to a root-owned one. */
	assert_int_equal(unlink(f->path), 0);
	snprintf(sub, sizeof(sub), "%s/sub", f->dir);
	snprintf(real, sizeof(real), "%s/real", f->dir);
	assert_int_equal(rename(sub, real), 0);
	assert_int_equal(symlink(real, sub), 0);
	assert_int_equal(qj_killlog_open(f->path, 0, 0, &l), -ELOOP);
	assert_null(l);
}

/* A log directory a user owns, or group/others may write, is refused. */
static void test_killlog_refuses_untrusted_dir(void **state)
{
	struct fixture *f = *state;
	struct qj_killlog *l = NULL;
	char sub[96];

	snprintf(sub, sizeof(sub), "%s/sub", f->dir);
	make_sub(f, 0750);
	assert_int_equal(chown(sub, 65534, 65534), 0);
	assert_int_equal(qj_killlog_open(f->path, 0, 0, &l), -EPERM);
	assert_int_equal(access(f->path, F_OK), -1);
	assert_int_equal(chown(sub, 0, 0), 0);
	assert_int_equal(chmod(sub, 0770), 0);
	assert_int_equal(qj_killlog_open(f->path, 0, 0, &l), -EPERM);
	assert_int_equal(chmod(sub, 01777), 0); /* sticky is no excuse for the log's own dir */
	assert_int_equal(qj_killlog_open(f->path, 0, 0, &l), -EPERM);
	/* An ancestor owned by a user: refused too. */
	assert_int_equal(chmod(sub, 0750), 0);
	assert_int_equal(chown(f->dir, 65534, 65534), 0);
	assert_int_equal(qj_killlog_open(f->path, 0, 0, &l), -EPERM);
	assert_int_equal(chown(f->dir, 0, 0), 0);
	assert_int_equal(qj_killlog_open(f->path, 0, 0, &l), 0);
	l = qj_killlog_free(l);
}

/*
 * The walk both writers use (common/dirwalk.c): a readable fd when asked (the metrics
 * file fsyncs its directory), an O_PATH one otherwise; the final directory's owner is
 * checked only for a private one; a symlinked ancestor is refused either way.
 */
static void test_dir_walked(void **state)
{
	struct fixture *f = *state;
	char sub[96], real[96];
	int fd = -1;

	snprintf(sub, sizeof(sub), "%s/sub", f->dir);
	make_sub(f, 0750);
	assert_int_equal(qj_open_dir_walked(sub, QJ_WALK_READABLE, &fd), 0);
	assert_int_equal(fsync(fd), 0);
	assert_int_equal(close(fd), 0);
	assert_int_equal(qj_open_dir_walked(sub, 0, &fd), 0);
	assert_int_equal(fsync(fd), -1); /* O_PATH */
	assert_int_equal(close(fd), 0);
	assert_int_equal(chown(sub, 65534, 65534), 0);
	assert_int_equal(qj_open_dir_walked(sub, QJ_WALK_PRIVATE, &fd), -EPERM);
	assert_int_equal(qj_open_dir_walked(sub, QJ_WALK_READABLE, &fd), 0);
	assert_int_equal(close(fd), 0);
	assert_int_equal(chown(sub, 0, 0), 0);
	snprintf(real, sizeof(real), "%s/real", f->dir);
	assert_int_equal(rename(sub, real), 0);
	assert_int_equal(symlink(real, sub), 0);
	strcat(sub, "/x");
	assert_int_equal(qj_open_dir_walked(sub, QJ_WALK_CREATE, &fd), -ELOOP);
	assert_int_equal(access(sub, F_OK), -1);
	assert_int_equal(qj_open_dir_walked("relative", 0, &fd), -EINVAL);
}

/* Rotation moves a symlink found in a rotation target, never writes through it. */
static void test_killlog_rotation_symlink(void **state)
{
	struct fixture *f = *state;
	struct qj_killlog *l = NULL;
	char secret[96], p[128];

	write_secret(f, secret, sizeof(secret));
	assert_int_equal(qj_killlog_open(f->path, 600, 2, &l), 0);
	snprintf(p, sizeof(p), "%s.1", f->path);
	assert_int_equal(symlink(secret, p), 0);
	snprintf(p, sizeof(p), "%s.2", f->path);
	assert_int_equal(symlink(secret, p), 0);
	for (int i = 0; i < 20; i++) {
		struct qj_kill_record r = rec((uint64_t)i, "busy", 100 + i, "sigstop");

		assert_int_equal(qj_killlog_append(l, &r), 0);
	}
	/* The live file swapped for a symlink: the next rotation must not open it. */
	assert_int_equal(unlink(f->path), 0);
	assert_int_equal(symlink(secret, f->path), 0);
	for (int i = 20; i < 30; i++) {
		struct qj_kill_record r = rec((uint64_t)i, "busy", 100 + i, "sigstop");

		(void)qj_killlog_append(l, &r);
	}
	l = qj_killlog_free(l);
	assert_int_equal(size_of(secret), 12);
}

/* The reader's fd is the daemon's file even when the path was swapped. */
static void test_killlog_reader_not_by_path(void **state)
{
	struct fixture *f = *state;
	struct qj_killlog *l = NULL;
	struct qj_kill_record r = rec(1, "busy", 100, "sigstop");
	char secret[96], moved[128], buf[2];
	struct stat want, got;
	int fd;

	write_secret(f, secret, sizeof(secret));
	assert_int_equal(qj_killlog_open(f->path, 0, 0, &l), 0);
	assert_int_equal(qj_killlog_append(l, &r), 0);
	snprintf(moved, sizeof(moved), "%s.moved", f->path);
	assert_int_equal(rename(f->path, moved), 0);
	assert_int_equal(symlink(secret, f->path), 0);
	fd = qj_killlog_open_reader(l);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &got), 0);
	assert_int_equal(stat(moved, &want), 0);
	assert_true(got.st_ino == want.st_ino && got.st_dev == want.st_dev);
	assert_int_equal(read(fd, buf, 1), 1);
	assert_int_equal(buf[0], '{');
	assert_int_equal(write(fd, "x", 1), -1); /* read-only */
	(void)close(fd);
	l = qj_killlog_free(l);
}

/* All of @path, NUL-terminated, into @buf. */
static size_t slurp(const char *path, char *buf, size_t size)
{
	FILE *fp = fopen(path, "re");
	size_t n;

	assert_non_null(fp);
	n = fread(buf, 1, size - 1, fp);
	buf[n] = '\0';
	fclose(fp);
	return n;
}

/*
 * A log left with an unfinished last line (a write cut short by a full disk,
 * then a crash) is cut back to its last full line at open: the next record
 * starts a line of its own instead of being glued to the torn one.
 */
static void test_killlog_cuts_torn_tail_at_open(void **state)
{
	struct fixture *f = *state;
	struct qj_killlog *l = NULL;
	struct qj_kill_record r = rec(2, "busy", 100, "sigstop");
	struct collect c = {};
	char buf[4096];
	FILE *fp;

	assert_int_equal(qj_killlog_open(f->path, 0, 0, &l), 0);
	l = qj_killlog_free(l);
	fp = fopen(f->path, "ae");
	assert_non_null(fp);
	fputs("{\"cycle\":1,\"action\":\"summary\"}\n{\"cycle\":1,\"app\":\"bu", fp);
	fclose(fp);

	assert_int_equal(qj_killlog_open(f->path, 0, 0, &l), 0);
	assert_int_equal(qj_killlog_append(l, &r), 0);
	l = qj_killlog_free(l);
	slurp(f->path, buf, sizeof(buf));
	assert_non_null(strstr(buf, "\"summary\"}\n{\"ts\""));
	assert_null(strstr(buf, "\"bu\n"));
	fp = fopen(f->path, "re");
	assert_int_equal(qj_killlog_read(fp, NULL, collect_cb, &c), 2);
	fclose(fp);
	assert_int_equal(json_integer_value(json_object_get(c.recs[1], "cycle")), 2);
	for (int i = 0; i < c.n; i++)
		json_decref(c.recs[i]);
}

/* A reopened log (a restarted daemon) knows the highest cycle id in it and in its rotation. */
static void test_killlog_highest_cycle(void **state)
{
	struct fixture *f = *state;
	struct qj_killlog *l = NULL;
	struct qj_kill_record r;
	char old[128];
	FILE *fp;

	assert_int_equal(qj_killlog_open(f->path, 0, 1, &l), 0);
	assert_int_equal(qj_killlog_highest_cycle(l), 0);
	for (uint64_t cy = 1; cy <= 7; cy += 3) { /* 1, 4, 7 */
		r = rec(cy, "busy", 100, "sigstop");
		assert_int_equal(qj_killlog_append(l, &r), 0);
	}
	l = qj_killlog_free(l);
	/* A gap record (no cycle) last, and a line that is not JSON: still 7. */
	fp = fopen(f->path, "ae");
	assert_non_null(fp);
	fputs("{\"action\":\"gap\",\"lost\":2}\nnot json\n", fp);
	fclose(fp);
	assert_int_equal(qj_killlog_open(f->path, 0, 1, &l), 0);
	assert_int_equal(qj_killlog_highest_cycle(l), 7);
	l = qj_killlog_free(l);

	/* Rotated away just before the restart: the rotation counts. */
	snprintf(old, sizeof(old), "%s.1", f->path);
	assert_int_equal(rename(f->path, old), 0);
	assert_int_equal(qj_killlog_open(f->path, 0, 1, &l), 0);
	assert_int_equal(qj_killlog_highest_cycle(l), 7);
	l = qj_killlog_free(l);

	/* Only the tail is read: a log larger than the window still gives its last cycle. */
	assert_int_equal(qj_killlog_open(f->path, 0, 0, &l), 0);
	for (uint64_t cy = 8; cy < 8 + 400; cy++) {
		r = rec(cy, "busy", 100, "sigstop");
		assert_int_equal(qj_killlog_append(l, &r), 0);
	}
	l = qj_killlog_free(l);
	assert_int_equal(qj_killlog_open(f->path, 0, 0, &l), 0);
	assert_int_equal(qj_killlog_highest_cycle(l), 407);
	l = qj_killlog_free(l);
}

/*
 * An odd rotation (.1 planted as a symlink to a log with a higher cycle, a FIFO
 * nobody writes, a directory) is not read: the daemon neither follows it nor
 * blocks on it, and the live log's highest cycle stands.
 */
static void test_killlog_odd_rotation_ignored(void **state)
{
	struct fixture *f = *state;
	struct qj_killlog *l = NULL;
	struct qj_kill_record r = rec(3, "busy", 100, "sigstop");
	char old[128], decoy[128];
	FILE *fp;

	assert_int_equal(qj_killlog_open(f->path, 0, 1, &l), 0);
	assert_int_equal(qj_killlog_append(l, &r), 0);
	l = qj_killlog_free(l);
	snprintf(old, sizeof(old), "%s.1", f->path);
	snprintf(decoy, sizeof(decoy), "%s/decoy.log", f->dir);
	fp = fopen(decoy, "we");
	assert_non_null(fp);
	fputs("{\"cycle\":99,\"action\":\"summary\"}\n", fp);
	fclose(fp);

	/* The decoy itself, as a regular .1, would count: the test can tell. */
	assert_int_equal(link(decoy, old), 0);
	assert_int_equal(qj_killlog_open(f->path, 0, 1, &l), 0);
	assert_int_equal(qj_killlog_highest_cycle(l), 99);
	l = qj_killlog_free(l);
	assert_int_equal(unlink(old), 0);

	assert_int_equal(symlink(decoy, old), 0);
	assert_int_equal(qj_killlog_open(f->path, 0, 1, &l), 0);
	assert_int_equal(qj_killlog_highest_cycle(l), 3);
	l = qj_killlog_free(l);
	assert_int_equal(unlink(old), 0);

	/* A FIFO with no writer: an open without O_NONBLOCK would hang here. */
	assert_int_equal(mkfifo(old, 0600), 0);
	alarm(10);
	assert_int_equal(qj_killlog_open(f->path, 0, 1, &l), 0);
	alarm(0);
	assert_int_equal(qj_killlog_highest_cycle(l), 3);
	l = qj_killlog_free(l);
	assert_int_equal(unlink(old), 0);

	assert_int_equal(mkdir(old, 0700), 0);
	assert_int_equal(qj_killlog_open(f->path, 0, 1, &l), 0);
	assert_int_equal(qj_killlog_highest_cycle(l), 3);
	l = qj_killlog_free(l);
	assert_int_equal(rmdir(old), 0);
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

/* The summary of the cycle noted at its begin says when it began; no other record does. */
static void test_killlog_summary_begin_ts(void **state)
{
	struct fixture *f = *state;
	struct qj_killlog *l = NULL;
	struct collect c = {};

	assert_int_equal(qj_killlog_open(f->path, 0, 3, &l), 0);
	assert_int_equal(qj_killlog_cycle_begin(l, 5, 1764752741123456ULL), 0);
	assert_int_equal(qj_killlog_append(l, &(struct qj_kill_record){ .cycle = 5,
									.app = "a",
									.pid = 1,
									.comm = "x",
									.action = "SIGSTOP",
									.outcome = "blocked" }),
			 0);
	for (int cycle = 4; cycle <= 5; cycle++) {
		json_t *o = json_pack("{s:i,s:s,s:i}", "cycle", cycle, "action", "summary",
				      "window_ms", 1000);

		assert_int_equal(qj_killlog_append_json(l, o), 0);
		json_decref(o);
	}
	l = qj_killlog_free(l);
	assert_int_equal(read_all(f->path, NULL, &c), 3);
	assert_null(json_object_get(c.recs[0], "begin_ts"));
	assert_null(json_object_get(c.recs[1], "begin_ts"));
	assert_string_equal(json_string_value(json_object_get(c.recs[2], "begin_ts")),
			    "2025-12-03T09:05:41.123Z");
	collect_done(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_killlog_append_read_filter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_killlog_rotation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_killlog_deferred_sync, setup, teardown),
		cmocka_unit_test_setup_teardown(test_killlog_refuses_symlinks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_killlog_refuses_untrusted_dir, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_killlog_rotation_symlink, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dir_walked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_killlog_reader_not_by_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_killlog_cuts_torn_tail_at_open, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_killlog_highest_cycle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_killlog_odd_rotation_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_killlog_summary_begin_ts, setup, teardown),
		cmocka_unit_test(test_rfc3339),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
