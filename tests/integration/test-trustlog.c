// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The kill log and the daemon's outputs against hostile users, on a real
 * qosjaild (dry-run backend): the log op's fd while the log's path is swapped,
 * the socket's mode (issue 11 finding 4), a full disk under the kill log
 * (finding 7: a small tmpfs mounted by the test), names that are not UTF-8
 * (finding 8), control characters in every human-readable output (finding 9).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon-harness.h"
#include "itest.h"
#include "killlog-read.h"
#include "killlog.h"
#include "qosjail.h"
#include "rfc3339.h"
#include "util.h"

/* Log readers: root and the adm group, as in the shipped policies. */
static const char policy_logs[] = "version: 1\n"
				  "suspend:\n"
				  "  backend: dry-run\n"
				  "  idle_delay: 1h\n"
				  "access:\n"
				  "  hold: \"*\"\n"
				  "  logs: { uids: [0], groups: [adm] }\n"
				  "log:\n"
				  "  path: @DIR@/kill.log\n";

static int setup_logs(void **state)
{
	return harness_setup(state, policy_logs) < 0 || !*state ? -1 : 0;
}

static void path_in(const struct harness *h, const char *name, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%s", h->dir, name);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(close(fd), 0);
}

/*
 * Runs @fn(@arg) in a child as uid 65534 with @gid as its only supplementary
 * group (-1: none); the child's exit status, 100 when it did not exit.
 */
static int as_nobody(gid_t gid, int (*fn)(void *arg), void *arg)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		gid_t g = gid == (gid_t)-1 ? 65534 : gid;

		if (setgroups(1, &g) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			_exit(99);
		_exit(fn(arg));
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 101;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

struct log_reader {
	const struct harness *h;
	ino_t want_ino;
	const char *want_text;
};

/* A logs-group member takes the log's fd; it must be the writer's file, read-only. */
static int read_log_as_member(void *arg)
{
	const struct log_reader *lr = arg;
	struct qj_conn *c = NULL;
	char buf[4096];
	struct stat st;
	ssize_t n;
	int fd = -1;

	if (qj_open(lr->h->socket, &c) < 0)
		return 1;
	if (qj_kill_log_open(c, &fd) != 0 || fd < 0)
		return 2;
	if (fstat(fd, &st) < 0 || st.st_ino != lr->want_ino)
		return 3; /* not the file the daemon writes */
	if ((fcntl(fd, F_GETFL) & O_ACCMODE) != O_RDONLY || write(fd, "x", 1) >= 0)
		return 4;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		return 5;
	buf[n] = '\0';
	if (strstr(buf, "SECRET") || !strstr(buf, lr->want_text))
		return 6;
	close(fd);
	qj_close(c);
	return 0;
}

/*
 * The log's path is swapped after the daemon opened it: renamed away and
 * replaced by a symlink to a root-only file, then removed altogether.  The
 * fd a logs-group member gets is the daemon's own file each time, never what
 * the path names now (issue 11 finding 4: it used to be /etc/shadow).
 */
static void test_log_fd_from_writer_while_path_swapped(void **state)
{
	struct harness *h = *state;
	char log[400], moved[400], secret[400];
	struct log_reader lr = { .h = h, .want_text = "\"marker\":\"writer\"" };
	struct group *adm = getgrnam("adm");
	struct stat st;

	assert_non_null(adm);
	path_in(h, "kill.log", log, sizeof(log));
	path_in(h, "kill.log.moved", moved, sizeof(moved));
	path_in(h, "secret", secret, sizeof(secret));
	assert_int_equal(stat(log, &st), 0);
	lr.want_ino = st.st_ino;
	/* Appended to the daemon's file (same inode): what a reader must see. */
	{
		int fd = open(log, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);

		assert_true(fd >= 0);
		assert_int_equal(write(fd, "{\"marker\":\"writer\"}\n", 20), 20);
		close(fd);
	}
	write_file(secret, "SECRET root only\n", 0600);

	/* Not a member: refused. */
	assert_int_equal(as_nobody((gid_t)-1, read_log_as_member, &lr), 2);
	/* A member, path unchanged. */
	assert_int_equal(as_nobody(adm->gr_gid, read_log_as_member, &lr), 0);
	/* Swapped for a symlink to a root-only file. */
	assert_int_equal(rename(log, moved), 0);
	assert_int_equal(symlink(secret, log), 0);
	assert_int_equal(as_nobody(adm->gr_gid, read_log_as_member, &lr), 0);
	/* Swapped for a hard link to it (no symlink to refuse). */
	assert_int_equal(unlink(log), 0);
	assert_int_equal(link(secret, log), 0);
	assert_int_equal(as_nobody(adm->gr_gid, read_log_as_member, &lr), 0);
	/* Gone. */
	assert_int_equal(unlink(log), 0);
	assert_int_equal(unlink(moved), 0);
	assert_int_equal(as_nobody(adm->gr_gid, read_log_as_member, &lr), 0);
	/* The secret was never opened for writing nor changed. */
	assert_int_equal(stat(secret, &st), 0);
	assert_int_equal(st.st_size, 17);
	assert_int_equal(st.st_mode & 07777, 0600);
}

/* Starts a daemon whose log is @log; true when it refused to start, saying @why. */
static bool daemon_refuses_log(const char *log, const char *why)
{
	struct harness h;
	char policy[1024];
	bool refused, said;
	int r;

	snprintf(policy, sizeof(policy),
		 "version: 1\nsuspend: { backend: dry-run, idle_delay: 1h }\nlog:\n  path: %s\n",
		 log);
	r = harness_start(&h, policy);
	refused = r == -ECHILD; /* exited before it answered */
	{
		char buf[8192] = "";
		FILE *f = fopen(h.log, "re");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		if (f)
			fclose(f);
		buf[n] = '\0';
		said = strstr(buf, why) != NULL;
		if (!refused || !said)
			fprintf(stderr, "start with log %s: %d\n%s", log, r, buf);
	}
	harness_cleanup(&h);
	return refused && said;
}

/*
 * The daemon refuses to start, with a message that says which rule, when the
 * log's directory is a user's, or the log is a symlink (finding 4: it used to
 * append to whatever file a user pointed it at).
 */
static void test_daemon_refuses_untrusted_log(void **state)
{
	char dir[64] = "/tmp/qj-untrusted-XXXXXX", sub[128], log[160], target[160];
	struct stat st;
	char cmd[128];

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0755), 0);
	/* A directory nobody (uid 65534) owns: nobody could swap the log. */
	snprintf(sub, sizeof(sub), "%s/user", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(chown(sub, 65534, 65534), 0);
	snprintf(log, sizeof(log), "%s/kill.log", sub);
	assert_true(daemon_refuses_log(log, "must be owned by root and not writable by group"));
	assert_int_equal(lstat(log, &st), -1); /* not created */
	/* A group-writable directory of root's. */
	assert_int_equal(chown(sub, 0, 0), 0);
	assert_int_equal(chmod(sub, 0775), 0);
	assert_true(daemon_refuses_log(log, "must be owned by root and not writable by group"));
	/* A symlink in the log's place, in a directory of root's. */
	assert_int_equal(chmod(sub, 0755), 0);
	snprintf(target, sizeof(target), "%s/target", dir);
	write_file(target, "", 0600);
	assert_int_equal(symlink(target, log), 0);
	assert_true(daemon_refuses_log(log, "a symlink on its path"));
	assert_int_equal(stat(target, &st), 0);
	assert_int_equal(st.st_size, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/*
 * The socket is 0666 (access is the policy's business) whatever umask the
 * daemon inherits, and a symlink left in its place is replaced, not followed:
 * its target keeps its mode.
 */
static void test_socket_mode(void **state)
{
	struct harness *h = *state;
	char target[400];
	struct stat st;
	mode_t old;
	int r;

	assert_int_equal(lstat(h->socket, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0666);
	assert_int_equal(st.st_uid, 0);

	assert_int_equal(harness_stop(h), 0);
	path_in(h, "target", target, sizeof(target));
	write_file(target, "", 0600);
	assert_int_equal(symlink(target, h->socket), 0);
	old = umask(077); /* inherited by the daemon */
	r = harness_respawn(h);
	(void)umask(old);
	assert_int_equal(r, 0);
	assert_int_equal(lstat(h->socket, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0666);
	assert_int_equal(stat(target, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
}

/* ---- a full disk under the kill log (finding 7) ---- */

/* A 4-page tmpfs, root's, mounted by the test on a fresh directory. */
struct small_fs {
	char dir[64];
	char filler[96];
	bool mounted;
};

static int small_fs_mount(void **state, const char *options)
{
	struct small_fs *fs = calloc(1, sizeof(*fs));

	if (!fs)
		return -1;
	snprintf(fs->dir, sizeof(fs->dir), "/tmp/qj-full-XXXXXX");
	if (!mkdtemp(fs->dir) ||
	    mount("qj-full", fs->dir, "tmpfs", MS_NOSUID | MS_NODEV, options) < 0) {
		fprintf(stderr, "cannot mount a tmpfs on %s: %m\n", fs->dir);
		(void)rmdir(fs->dir);
		free(fs);
		return -1;
	}
	fs->mounted = true;
	snprintf(fs->filler, sizeof(fs->filler), "%s/filler", fs->dir);
	*state = fs;
	return 0;
}

static int small_fs_setup(void **state)
{
	return small_fs_mount(state, "size=16k,mode=0755");
}

/* Four inodes: the root, the log's directory, the log and one more. */
static int few_inodes_setup(void **state)
{
	return small_fs_mount(state, "size=64k,nr_inodes=4,mode=0755");
}

static int small_fs_teardown(void **state)
{
	struct small_fs *fs = *state;

	if (!fs)
		return 0;
	if (fs->mounted)
		(void)umount2(fs->dir, MNT_DETACH);
	(void)rmdir(fs->dir);
	free(fs);
	return 0;
}

/* Takes every free byte of the tmpfs. */
static void fill(const struct small_fs *fs)
{
	static const char block[512];
	int fd = open(fs->filler, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	while (write(fd, block, sizeof(block)) > 0)
		;
	assert_int_equal(errno, ENOSPC);
	while (write(fd, block, 1) > 0)
		;
	close(fd);
}

static void unfill(const struct small_fs *fs)
{
	assert_int_equal(unlink(fs->filler), 0);
}

static off_t file_size(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

struct lines {
	json_t *recs[64];
	int n;
};

static int lines_cb(json_t *r, void *userdata)
{
	struct lines *c = userdata;

	if (c->n < 64)
		c->recs[c->n++] = json_incref(r);
	return 0;
}

/*
 * Every line of @path is a whole JSON object ending in a newline: no torn line,
 * nothing glued to one.  The records in @ret (caller json_decref()s them).
 */
static void read_whole_lines(const char *path, struct lines *ret)
{
	char buf[16384];
	FILE *f = fopen(path, "re");
	size_t n, count = 0;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	assert_true(n == 0 || buf[n - 1] == '\n');
	for (size_t i = 0; i < n; i++)
		count += buf[i] == '\n';
	rewind(f);
	memset(ret, 0, sizeof(*ret));
	assert_int_equal(qj_killlog_read(f, NULL, lines_cb, ret), (int)count);
	fclose(f);
}

static void lines_done(struct lines *l)
{
	for (int i = 0; i < l->n; i++)
		json_decref(l->recs[i]);
	l->n = 0;
}

static struct qj_kill_record big_record(uint64_t cycle)
{
	static const char reason[] =
		"busy: used the CPU over the sample window while a suspend was "
		"pending; this reason is long so that a record spans a good "
		"part of a page and the one that does not fit is cut short";

	return (struct qj_kill_record){
		.ts_usec = 1764752741123456ULL + cycle * USEC_PER_SEC,
		.cycle = cycle,
		.app = "busy",
		.pid = 4242,
		.comm = "qj-busy",
		.exe = "/usr/bin/qj-busy",
		.uid = 1000,
		.cgroup = "/qosjail/busy",
		.action = "sigstop",
		.rung = 1,
		.rung_name = "stop",
		.reason = reason,
		.cpu_ms = 290,
		.window_ms = 300,
		.outcome = "blocked",
		.strikes = 1,
	};
}

/*
 * The disk fills up: the record that does not fit is written in part by the
 * kernel (a short write, then ENOSPC) and must be cut back whole; the next
 * one fails too; both are counted.  When space returns, a gap record saying
 * two are missing (and when) comes before the next record, and every line of
 * the log is whole.
 */
static void test_disk_full_cut_back_counted_gap(void **state)
{
	struct small_fs *fs = *state;
	struct qj_killlog *l = NULL;
	struct qj_killlog_stats ks;
	struct qj_kill_record r;
	struct lines lines;
	char path[128];
	off_t before = 0;
	uint64_t cycle = 1;
	int ret;

	snprintf(path, sizeof(path), "%s/log/kill.log", fs->dir);
	assert_int_equal(qj_killlog_open(path, 0, 0, &l), 0);
	r = big_record(cycle++);
	assert_int_equal(qj_killlog_append(l, &r), 0);
	fill(fs);
	/* Records fit in the log's last page until one crosses into the next. */
	for (;;) {
		before = file_size(path);
		r = big_record(cycle++);
		ret = qj_killlog_append(l, &r);
		if (ret < 0)
			break;
		assert_true(cycle < 20);
	}
	assert_int_equal(ret, -ENOSPC);
	/* It was written in part (the page was not full): now cut back whole. */
	assert_true(before % 4096 != 0);
	assert_int_equal(file_size(path), before);
	qj_killlog_get_stats(l, &ks);
	assert_true(ks.lost == 1 && ks.unrecorded == 1 && ks.last_error == -ENOSPC);
	r = big_record(cycle++);
	assert_int_equal(qj_killlog_append(l, &r), -ENOSPC);
	assert_int_equal(file_size(path), before);
	read_whole_lines(path, &lines);
	lines_done(&lines);

	unfill(fs);
	r = big_record(cycle);
	assert_int_equal(qj_killlog_append(l, &r), 0);
	qj_killlog_get_stats(l, &ks);
	assert_true(ks.lost == 2 && ks.unrecorded == 0 && ks.last_error == -ENOSPC);
	l = qj_killlog_free(l);

	read_whole_lines(path, &lines);
	assert_true(lines.n >= 3);
	{
		json_t *gap = lines.recs[lines.n - 2], *last = lines.recs[lines.n - 1];
		char want_first[32], want_last[32];

		assert_string_equal(json_string_value(json_object_get(gap, "action")), "gap");
		assert_int_equal(json_integer_value(json_object_get(gap, "lost")), 2);
		assert_string_equal(json_string_value(json_object_get(gap, "error")), "ENOSPC");
		(void)qj_format_rfc3339(big_record(cycle - 2).ts_usec, want_first,
					sizeof(want_first));
		(void)qj_format_rfc3339(big_record(cycle - 1).ts_usec, want_last,
					sizeof(want_last));
		assert_string_equal(json_string_value(json_object_get(gap, "first_ts")),
				    want_first);
		assert_string_equal(json_string_value(json_object_get(gap, "last_ts")), want_last);
		assert_int_equal(json_integer_value(json_object_get(last, "cycle")), cycle);
		/* Before the gap: the records that fit, in order, none lost twice. */
		for (int i = 0; i < lines.n - 2; i++)
			assert_int_equal(
				json_integer_value(json_object_get(lines.recs[i], "cycle")), i + 1);
	}
	lines_done(&lines);
}

/*
 * Rotation renames the log away and cannot create a new one (no inode left):
 * those records are counted lost, the writer keeps trying to reopen, and once
 * it can, a gap record comes first; the rotated log is whole.
 */
static void test_rotation_without_inode_reopens_with_gap(void **state)
{
	struct small_fs *fs = *state;
	struct qj_killlog *l = NULL;
	struct qj_killlog_stats ks;
	struct qj_kill_record r;
	struct lines lines;
	char path[128], rotated[140], pin[128];
	uint64_t cycle = 1;
	int ret;

	snprintf(path, sizeof(path), "%s/log/kill.log", fs->dir);
	snprintf(rotated, sizeof(rotated), "%s.1", path);
	snprintf(pin, sizeof(pin), "%s/pin", fs->dir);
	assert_int_equal(qj_killlog_open(path, 4096, 1, &l), 0);
	write_file(pin, "", 0600); /* the last inode */
	for (;;) {
		r = big_record(cycle++);
		ret = qj_killlog_append(l, &r);
		if (ret < 0)
			break;
		assert_true(cycle < 30);
	}
	assert_int_equal(ret, -ENOSPC);
	assert_int_equal(access(path, F_OK), -1); /* renamed away, not recreated */
	r = big_record(cycle++);
	assert_int_equal(qj_killlog_append(l, &r), -ENOSPC);
	qj_killlog_get_stats(l, &ks);
	assert_true(ks.lost == 2 && ks.unrecorded == 2);

	assert_int_equal(unlink(pin), 0);
	r = big_record(cycle);
	assert_int_equal(qj_killlog_append(l, &r), 0);
	l = qj_killlog_free(l);
	read_whole_lines(path, &lines);
	assert_int_equal(lines.n, 2);
	assert_string_equal(json_string_value(json_object_get(lines.recs[0], "action")), "gap");
	assert_int_equal(json_integer_value(json_object_get(lines.recs[0], "lost")), 2);
	assert_int_equal(json_integer_value(json_object_get(lines.recs[1], "cycle")), cycle);
	lines_done(&lines);
	read_whole_lines(rotated, &lines);
	assert_int_equal(lines.n, (int)cycle - 3);
	lines_done(&lines);
}

/* A jail with one app ("busy") that the SIGSTOP rung stops and nothing else; log @LOG@. */
static const char policy_jail_fmt[] = "version: 1\n"
				      "suspend:\n"
				      "  backend: dry-run\n"
				      "  idle_delay: 1h\n"
				      "  dry_run_length: 300ms\n"
				      "jail:\n"
				      "  cgroup: @CG@\n"
				      "  cpu_cgroup: @CPU@\n"
				      "  busy_threshold: 20%%\n"
				      "  sample_window: 300ms\n"
				      "escalation:\n"
				      "  ladder:\n"
				      "    - { action: SIGSTOP, grace: 1h }\n"
				      "apps:\n"
				      "  - name: busy\n"
				      "    match: { exe: \"/nonexistent/busy\" }\n"
				      "access:\n"
				      "  hold: \"*\"\n"
				      "log:\n"
				      "  path: %s\n";

struct full_daemon {
	struct small_fs *fs;
	struct harness *h;
	char log[128];
	pid_t busy;
};

static int full_daemon_setup(void **state)
{
	struct full_daemon *fd = calloc(1, sizeof(*fd));
	char policy[2048];
	void *fs = NULL;

	if (!fd || small_fs_setup(&fs) < 0) {
		free(fd);
		return -1;
	}
	fd->fs = fs;
	snprintf(fd->log, sizeof(fd->log), "%s/log/kill.log", fd->fs->dir);
	snprintf(policy, sizeof(policy), policy_jail_fmt, fd->log);
	*state = fd;
	return harness_setup((void **)&fd->h, policy) < 0 || !fd->h ? -1 : 0;
}

static int full_daemon_teardown(void **state)
{
	struct full_daemon *fd = *state;
	void *fs;
	int r;

	if (!fd)
		return 0;
	if (fd->busy > 0) {
		(void)kill(fd->busy, SIGKILL);
		(void)waitpid(fd->busy, NULL, 0);
	}
	r = harness_teardown((void **)&fd->h);
	fs = fd->fs;
	(void)small_fs_teardown(&fs);
	free(fd);
	return r;
}

/* The daemon's status.kill_log.@key, -1 when unreadable. */
static long long kill_log_stat(struct harness *h, const char *key)
{
	json_t *j = harness_status(h);
	long long v = -1;

	if (j && json_is_integer(json_object_get(json_object_get(j, "kill_log"), key)))
		v = (long long)json_integer_value(
			json_object_get(json_object_get(j, "kill_log"), key));
	json_decref(j);
	return v;
}

static bool wait_kill_log_stat(struct harness *h, const char *key, bool (*ok)(long long v),
			       int timeout_ms)
{
	for (int waited = 0; waited < timeout_ms; waited += 10) {
		if (ok(kill_log_stat(h, key)))
			return true;
		msleep(10);
	}
	return false;
}

static bool at_least_one(long long v)
{
	return v >= 1;
}

static bool zero(long long v)
{
	return v == 0;
}

/* Output of `qosjailctl --socket S ARGS` (first 8 KiB). */
static void ctl_output(struct harness *h, const char *args, char *buf, size_t size)
{
	char cmd[1024];
	FILE *p;
	size_t n;

	snprintf(cmd, sizeof(cmd), "%s/controller/qosjailctl --socket %s %s",
		 getenv("QJ_BUILD_DIR"), h->socket, args);
	p = popen(cmd, "re");
	assert_non_null(p);
	n = fread(buf, 1, size - 1, p);
	buf[n] = '\0';
	assert_int_equal(pclose(p), 0);
}

static long long suspends(struct harness *h)
{
	json_t *j = harness_status(h);
	long long n;

	assert_non_null(j);
	n = json_integer_value(json_object_get(j, "suspends"));
	json_decref(j);
	return n;
}

/*
 * Starts a cycle and waits until the SIGSTOP rung has stopped @busy: seen stopped, or
 * the cycle's (dry-run) suspend done, which needs the busy task blocked.  The stop
 * lasts only the dry run's 300 ms, which a loaded machine can sleep through.
 */
static void cycle_until_stopped(struct harness *h, pid_t busy, struct qj_conn *c)
{
	long long before = suspends(h);

	assert_int_equal(qj_suspend(c), 0);
	for (int i = 0; i < 1000 && itest_state(busy) != 'T' && suspends(h) == before; i++)
		msleep(10);
	if (itest_state(busy) != 'T' && suspends(h) == before) {
		harness_dump_log(h);
		fail_msg("busy task %d not stopped (state %c)", busy, itest_state(busy));
	}
}

/* Waits until the cycle is over and @busy runs again. */
static void until_continued(struct harness *h, pid_t busy)
{
	for (int i = 0; i < 1000 && itest_state(busy) == 'T'; i++)
		msleep(10);
	assert_true(itest_state(busy) != 'T');
	assert_true(harness_wait_state(h, "idle-wait", 5000) ||
		    harness_wait_state(h, "awake", 100));
}

/*
 * The daemon's kill log fills its disk: the records of a cycle are lost, the
 * loss shows in `status` (and --json) with the error, and when space returns
 * the next cycle's records come after a gap record with the same count.
 */
static void test_disk_full_daemon_status_and_gap(void **state)
{
	struct full_daemon *fd = *state;
	struct qj_conn *c = NULL;
	char exe[512], out[8192];
	char *argv[] = { exe, NULL };
	struct lines lines;
	long long lost;
	int gaps = 0;

	snprintf(exe, sizeof(exe), "%s/tests/apps/qj-busy", getenv("QJ_BUILD_DIR"));
	assert_int_equal(qj_open(fd->h->socket, &c), 0);
	assert_int_equal(qj_spawn(c, "busy", argv, &fd->busy, NULL), 0);
	assert_int_equal(kill_log_stat(fd->h, "lost"), 0);
	fill(fd->fs);

	cycle_until_stopped(fd->h, fd->busy, c);
	assert_true(wait_kill_log_stat(fd->h, "lost", at_least_one, 5000));
	until_continued(fd->h, fd->busy);
	lost = kill_log_stat(fd->h, "lost");
	assert_true(lost >= 2); /* the stop and the cycle's summary */
	assert_int_equal(kill_log_stat(fd->h, "unrecorded"), lost);
	ctl_output(fd->h, "status", out, sizeof(out));
	if (!strstr(out, "records not written (ENOSPC)"))
		fail_msg("status does not show the loss:\n%s", out);
	ctl_output(fd->h, "status --json", out, sizeof(out));
	assert_non_null(strstr(out, "\"error\":\"ENOSPC\""));
	read_whole_lines(fd->log, &lines);
	assert_int_equal(lines.n, 0);
	lines_done(&lines);

	unfill(fd->fs);
	cycle_until_stopped(fd->h, fd->busy, c);
	assert_true(wait_kill_log_stat(fd->h, "unrecorded", zero, 5000));
	assert_int_equal(kill_log_stat(fd->h, "lost"), lost);
	until_continued(fd->h, fd->busy);
	/* The restore continues the task, then writes the cycle's summary: wait for it. */
	for (int i = 0;; i++) {
		read_whole_lines(fd->log, &lines);
		if (i == 500 ||
		    (lines.n >= 3 &&
		     strcmp(json_string_value(json_object_get(lines.recs[lines.n - 1], "action")),
			    "summary") == 0))
			break;
		lines_done(&lines);
		msleep(10);
	}
	assert_true(lines.n >= 3); /* gap, stop, summary */
	assert_string_equal(json_string_value(json_object_get(lines.recs[0], "action")), "gap");
	assert_int_equal(json_integer_value(json_object_get(lines.recs[0], "lost")), lost);
	for (int i = 0; i < lines.n; i++)
		gaps += strcmp(json_string_value(json_object_get(lines.recs[i], "action")),
			       "gap") == 0;
	assert_int_equal(gaps, 1);
	lines_done(&lines);
	qj_close(c);
}

/* ---- names that are not UTF-8 (finding 8) ---- */

static const char bad_name[] = "bad\xff\xfe";

/*
 * A peer whose comm is not valid UTF-8 takes a hold: the listing still shows
 * every hold (it used to be "(none)" for everyone), that comm escaped.
 */
static void test_non_utf8_comm_in_holds_listing(void **state)
{
	struct harness *h = *state;
	struct qj_conn *mine = NULL, *weird = NULL, *c = NULL;
	char saved[17] = "", out[8192], *text = NULL;
	json_t *j, *hold;
	size_t i;
	bool seen_weird = false, seen_mine = false;

	assert_int_equal(prctl(PR_GET_NAME, saved), 0);
	assert_int_equal(prctl(PR_SET_NAME, bad_name), 0);
	assert_int_equal(qj_open(h->socket, &weird), 0); /* the daemon reads comm at connect */
	assert_int_equal(prctl(PR_SET_NAME, saved), 0);
	assert_int_equal(qj_hold(weird, "weird", "comm is not UTF-8", 0, 0), 0);
	assert_int_equal(qj_open(h->socket, &mine), 0);
	assert_int_equal(qj_hold(mine, "mine", "root's own", 0, 0), 0);

	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_holds(c, &text), 0);
	j = json_loads(text, 0, NULL);
	assert_non_null(j);
	assert_int_equal(json_array_size(json_object_get(j, "holds")), 2);
	json_array_foreach (json_object_get(j, "holds"), i, hold) {
		const char *name = json_string_value(json_object_get(hold, "name"));
		const char *comm = json_string_value(json_object_get(hold, "comm"));

		if (strcmp(name, "weird") == 0) {
			assert_string_equal(comm, "bad\\xff\\xfe");
			seen_weird = true;
		} else if (strcmp(name, "mine") == 0) {
			seen_mine = true;
		}
	}
	assert_true(seen_weird && seen_mine);
	json_decref(j);
	free(text);
	text = NULL;
	j = harness_status(h);
	assert_non_null(j);
	assert_int_equal(json_array_size(json_object_get(j, "holds")), 2);
	json_decref(j);
	ctl_output(h, "holds", out, sizeof(out));
	assert_null(strstr(out, "(none)"));
	assert_non_null(strstr(out, "weird"));
	/* explain reads the name at the request: answered, escaped. */
	assert_int_equal(prctl(PR_SET_NAME, bad_name), 0);
	assert_int_equal(qj_explain(c, getpid(), &text), 0);
	assert_int_equal(prctl(PR_SET_NAME, saved), 0);
	assert_non_null(strstr(text, "\"comm\":\"bad\\\\xff\\\\xfe\""));
	free(text);
	qj_close(c);
	qj_close(mine);
	qj_close(weird);
}

/* The kill log's records of @pid with @action, 0 when none. */
static int records_of(const char *log, pid_t pid, const char *action, struct lines *ret)
{
	struct lines all;
	FILE *f = fopen(log, "re");
	int n = 0;

	memset(ret, 0, sizeof(*ret));
	if (!f)
		return 0;
	memset(&all, 0, sizeof(all));
	(void)qj_killlog_read(f, NULL, lines_cb, &all);
	fclose(f);
	for (int i = 0; i < all.n; i++) {
		json_t *r = all.recs[i];

		if (json_integer_value(json_object_get(r, "pid")) == pid &&
		    strcmp(json_string_value(json_object_get(r, "action")) ?: "", action) == 0) {
			ret->recs[ret->n++] = json_incref(r);
			n++;
		}
	}
	lines_done(&all);
	return n;
}

static int setup_jail(void **state)
{
	char policy[2048];

	snprintf(policy, sizeof(policy), policy_jail_fmt, "@DIR@/kill.log");
	return harness_setup(state, policy) < 0 || !*state ? -1 : 0;
}

/*
 * A jailed program whose name and executable path are not UTF-8 is stopped:
 * its kill-log record is written (it used to be dropped), comm and exe escaped.
 */
static void test_non_utf8_comm_in_kill_log(void **state)
{
	struct harness *h = *state;
	char src[512], exe[512], log[400], cmd[1200];
	char *argv[] = { exe, NULL };
	struct qj_conn *c = NULL;
	struct lines recs;
	const char *got;
	pid_t busy;
	int n = 0;

	snprintf(src, sizeof(src), "%s/tests/apps/qj-busy", getenv("QJ_BUILD_DIR"));
	snprintf(exe, sizeof(exe), "%s/qj-%s", h->dir, bad_name);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", src, exe);
	assert_int_equal(system(cmd), 0);
	path_in(h, "kill.log", log, sizeof(log));
	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_spawn(c, "busy", argv, &busy, NULL), 0);
	cycle_until_stopped(h, busy, c);
	for (int i = 0; i < 300 && (n = records_of(log, busy, "SIGSTOP", &recs)) == 0; i++)
		msleep(10);
	(void)kill(busy, SIGKILL);
	(void)waitpid(busy, NULL, 0);
	if (n != 1) {
		harness_dump_log(h);
		fail_msg("%d sigstop records of pid %d in the kill log", n, busy);
	}
	assert_string_equal(json_string_value(json_object_get(recs.recs[0], "comm")),
			    "qj-bad\\xff\\xfe");
	got = json_string_value(json_object_get(recs.recs[0], "exe"));
	assert_non_null(got);
	assert_non_null(strstr(got, "/qj-bad\\xff\\xfe"));
	lines_done(&recs);
	qj_close(c);
}

/* ---- control characters in human-readable output (finding 9) ---- */

static const char evil_comm[] = "\x1b[31mevil";
static const char evil_name[] = "\x1b[2J\x1b[Hscreen";
static const char evil_reason[] = "x\r\n  sshd                 1        0      systemd";

/*
 * A child as uid 65534 with an escape-laden comm holds evil_name for
 * evil_reason until *ret_release is closed; its pid.
 */
static pid_t start_evil_holder(const struct harness *h, int *ret_release)
{
	int ready[2], release[2];
	char b = 0;
	pid_t pid;

	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	assert_int_equal(pipe2(release, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct qj_conn *c = NULL;
		gid_t g = 65534;

		close(release[1]);
		if (setgroups(1, &g) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0 || prctl(PR_SET_NAME, evil_comm) < 0 ||
		    qj_open(h->socket, &c) < 0 || qj_hold(c, evil_name, evil_reason, 0, 0) < 0)
			_exit(1);
		(void)!write(ready[1], "k", 1);
		(void)!read(release[0], &b, 1); /* EOF: the test is done */
		_exit(0);
	}
	close(ready[1]);
	close(release[0]);
	assert_int_equal(read(ready[0], &b, 1), 1);
	close(ready[0]);
	assert_int_equal(b, 'k');
	*ret_release = release[1];
	return pid;
}

/* No byte a terminal acts on but the newline, and no forged table row. */
static void assert_terminal_safe(const char *what, const char *out)
{
	for (const unsigned char *p = (const unsigned char *)out; *p; p++)
		if ((*p < 0x20 && *p != '\n') || *p == 0x7f)
			fail_msg("%s has byte 0x%02x at %zu:\n%s", what, *p,
				 (size_t)(p - (const unsigned char *)out), out);
	if (strstr(out, "\n  sshd "))
		fail_msg("%s has a forged line:\n%s", what, out);
}

/*
 * Another user's comm, hold name and reason full of terminal escapes and a
 * fake table row: root's `qosjailctl holds`, `status`, `explain` and the
 * daemon's own log show them escaped, on one line each (it used to clear
 * root's screen and print the fake row).
 */
static void test_control_chars_escaped_in_outputs(void **state)
{
	struct harness *h = *state;
	char out[16384], args[64];
	int release = -1, status;
	pid_t pid;
	FILE *f;
	size_t n;

	pid = start_evil_holder(h, &release);
	ctl_output(h, "holds", out, sizeof(out));
	assert_terminal_safe("holds", out);
	assert_non_null(strstr(out, "\\e[2J\\e[Hscreen"));
	assert_non_null(strstr(out, "\\e[31mevil"));
	assert_non_null(strstr(out, "x\\r\\n  sshd"));
	ctl_output(h, "status", out, sizeof(out));
	assert_terminal_safe("status", out);
	assert_non_null(strstr(out, "\\e[2J\\e[Hscreen"));
	snprintf(args, sizeof(args), "explain %d", pid);
	ctl_output(h, args, out, sizeof(out));
	assert_terminal_safe("explain", out);
	assert_non_null(strstr(out, "(\\e[31mevil)"));

	close(release);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* The daemon's debug log quoted comm, name and reason: escaped there too. */
	for (int i = 0; i < 100; i++) {
		f = fopen(h->log, "re");
		assert_non_null(f);
		n = fread(out, 1, sizeof(out) - 1, f);
		out[n] = '\0';
		fclose(f);
		if (strstr(out, "screen"))
			break;
		msleep(10);
	}
	assert_non_null(strstr(out, "screen"));
	assert_terminal_safe("the daemon's log", out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_log_fd_from_writer_while_path_swapped,
						setup_logs, harness_teardown),
		cmocka_unit_test_setup_teardown(test_socket_mode, setup_logs, harness_teardown),
		cmocka_unit_test(test_daemon_refuses_untrusted_log),
		cmocka_unit_test_setup_teardown(test_disk_full_cut_back_counted_gap, small_fs_setup,
						small_fs_teardown),
		cmocka_unit_test_setup_teardown(test_rotation_without_inode_reopens_with_gap,
						few_inodes_setup, small_fs_teardown),
		cmocka_unit_test_setup_teardown(test_disk_full_daemon_status_and_gap,
						full_daemon_setup, full_daemon_teardown),
		cmocka_unit_test_setup_teardown(test_non_utf8_comm_in_holds_listing, setup_logs,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_non_utf8_comm_in_kill_log, setup_jail,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_control_chars_escaped_in_outputs, setup_logs,
						harness_teardown),
	};
	int r = harness_need_root("integration/trustlog");

	if (r >= 0)
		return r;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
