// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Trusted work waiting on the jail is shown (issue 25 finding 6): status (and its JSON),
 * explain of the waiting process, and a kill log record when a cycle suspends.
 *
 *  - a jailed busy process holds a flock (and one a POSIX lock); the cycle stops it; a
 *    trusted process of the test blocks on the same lock;
 *  - a jailed FUSE server (tests/apps/qj-fuseserver) is stopped, and a trusted reader
 *    of its file waits for the answer.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon-harness.h"
#include "itest.h"
#include "qosjail.h"
#include "stuck.h"
#include "util.h"

#define CAP_MS 30000

static const char policy[] = "version: 1\n"
			     "suspend:\n"
			     "  backend: dry-run\n"
			     "  idle_delay: 1h\n"
			     "  dry_run_length: 3s\n"
			     "jail:\n"
			     "  cgroup: @CG@\n"
			     "  cpu_cgroup: @CPU@\n"
			     "  busy_threshold: 20%\n"
			     "  sample_window: 300ms\n"
			     "escalation:\n"
			     "  ladder:\n"
			     "    - { action: SIGSTOP, grace: 1h }\n"
			     "apps:\n"
			     "  - name: locker\n"
			     "    match: { exe: \"/nonexistent/locker\" }\n"
			     "  - name: server\n"
			     "    match: { exe: \"/nonexistent/server\" }\n";

static char dir[64];
static pid_t fuse_server;

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/qjwait-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	return harness_setup(state, policy);
}

static int teardown(void **state)
{
	char path[128];

	if (fuse_server > 0) {
		(void)kill(fuse_server, SIGKILL); /* closes /dev/fuse: readers get ENOTCONN */
		(void)waitpid(fuse_server, NULL, 0);
		fuse_server = 0;
	}
	snprintf(path, sizeof(path), "%s/mnt", dir);
	(void)umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW);
	(void)rmdir(path);
	snprintf(path, sizeof(path), "%s/lock", dir);
	(void)unlink(path);
	(void)rmdir(dir);
	return harness_teardown(state);
}

/* Spawns tests/apps/qj-@name into @app with @args (argv[0] filled in); waits for "ready". */
static pid_t spawn_jailed(struct harness *h, const char *app, const char *name, char **argv)
{
	char exe[512], path[64];
	struct qj_conn *c = NULL;
	pid_t pid;

	snprintf(exe, sizeof(exe), "%s/tests/apps/qj-%s", getenv("QJ_BUILD_DIR"), name);
	argv[0] = exe;
	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_spawn(c, app, argv, &pid, NULL), 0);
	harness_track(pid);
	qj_close(c);
	/* It inherits our stdout: wait until it holds what it should, not for its line. */
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	for (int i = 0; i < CAP_MS / 10; i++) {
		char link[600];
		ssize_t n = readlink(path, link, sizeof(link) - 1);

		if (n > 0 && (link[n] = '\0', strcmp(link, exe) == 0))
			break;
		msleep(10);
	}
	return pid;
}

/* A child of ours (trusted) that blocks until it gets the lock on @file, then exits. */
static pid_t trusted_waiter(const char *file, bool posix)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		int fd = open(file, O_RDWR | O_CLOEXEC);

		_exit(fd >= 0 && (posix ? fcntl(fd, F_SETLKW, &fl) : flock(fd, LOCK_EX)) == 0 ? 0 :
												1);
	}
	harness_track(pid);
	return pid;
}

/* The entry of @list (a waiting_on_jail array) for waiter @pid, NULL when none. */
static json_t *entry_for(json_t *list, pid_t pid)
{
	size_t i;
	json_t *e;

	json_array_foreach (list, i, e)
		if (json_integer_value(json_object_get(e, "pid")) == pid)
			return e;
	return NULL;
}

/* Polls status until it lists @waiter waiting on @holder; the entry's text. */
static void expect_in_status(struct harness *h, pid_t waiter, pid_t holder, const char *kind)
{
	for (int i = 0; i < CAP_MS / 20; i++) {
		json_t *j = harness_status(h);
		json_t *e = entry_for(json_object_get(j, "waiting_on_jail"), waiter);

		if (e && json_integer_value(json_object_get(e, "holder")) == holder) {
			assert_string_equal(json_string_value(json_object_get(e, "kind")), kind);
			print_message("status: %s\n",
				      json_string_value(json_object_get(e, "text")));
			json_decref(j);
			return;
		}
		json_decref(j);
		msleep(20);
	}
	harness_dump_log(h);
	fail_msg("status never listed pid %d waiting on jailed pid %d", waiter, holder);
}

static void expect_in_explain(struct harness *h, pid_t waiter, pid_t holder)
{
	struct qj_conn *c = NULL;
	char *text = NULL;
	json_t *j, *e;

	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_explain(c, waiter, &text), 0);
	j = json_loads(text, 0, NULL);
	e = entry_for(json_object_get(j, "waiting_on_jail"), waiter);
	if (!e || json_integer_value(json_object_get(e, "holder")) != holder)
		fail_msg("explain %d: %s", waiter, text);
	json_decref(j);
	free(text);
	qj_close(c);
}

/* The kill log has a "waiting" record of @waiter on @holder. */
static bool logged(struct harness *h, pid_t waiter, pid_t holder)
{
	static char buf[1 << 16];
	char want[96], path[300];
	FILE *f;
	size_t n;

	snprintf(want, sizeof(want), "\"pid\":%d", waiter);
	snprintf(path, sizeof(path), "%s/kill.log", h->dir);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		char hold[48];

		snprintf(hold, sizeof(hold), "\"holder\":%d", holder);
		if (strstr(line, "\"action\":\"waiting\"") && strstr(line, want) &&
		    strstr(line, hold))
			return true;
	}
	return false;
}

static void test_lock_held_by_stopped_jailed(void **state)
{
	struct harness *h = *state;
	char file[128], *argv[] = { NULL, file, "flock", "busy", NULL };
	char *argv2[] = { NULL, NULL, "fcntl", "busy", NULL };
	char file2[128];
	struct qj_conn *c = NULL;
	pid_t locker, locker2, waiter, waiter2;

	REQUIRE_HARNESS(h);
	snprintf(file, sizeof(file), "%s/lock", dir);
	snprintf(file2, sizeof(file2), "%s/lock2", dir);
	argv2[1] = file2;
	locker = spawn_jailed(h, "locker", "locker", argv);
	locker2 = spawn_jailed(h, "locker", "locker", argv2);
	/* Each holds its lock before the trusted side asks for it. */
	for (int i = 0; i < CAP_MS / 10 && access(file2, F_OK) < 0; i++)
		msleep(10);
	msleep(100);
	waiter = trusted_waiter(file, false);
	waiter2 = trusted_waiter(file2, true);
	expect_in_status(h, waiter, locker, "lock");
	expect_in_status(h, waiter2, locker2, "lock");
	expect_in_explain(h, waiter, locker);
	{
		char cmd[1024];

		/* The operator's view: qosjailctl status says it too. */
		snprintf(
			cmd, sizeof(cmd),
			"%s/controller/qosjailctl --socket %s status | grep -q 'pid %d .*waits for "
			"a FLOCK WRITE lock'",
			getenv("QJ_BUILD_DIR"), h->socket, waiter);
		assert_int_equal(system(cmd), 0);
	}

	/* A cycle stops the busy lockers; the suspend is logged with who waits on them. */
	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_suspend(c), 0);
	qj_close(c);
	for (int i = 0;
	     i < CAP_MS / 20 && !(logged(h, waiter, locker) && logged(h, waiter2, locker2)); i++)
		msleep(20);
	if (!logged(h, waiter, locker) || !logged(h, waiter2, locker2)) {
		harness_dump_log(h);
		fail_msg("no kill log record of the trusted waiters");
	}
	(void)unlink(file2);
}

/* One status round trip (connect, hello, status) in ms. */
static double status_ms(struct harness *h)
{
	uint64_t t0 = now_usec(CLOCK_MONOTONIC);
	json_t *j = harness_status(h);

	assert_non_null(j);
	json_decref(j);
	return (now_usec(CLOCK_MONOTONIC) - t0) / 1000.0;
}

static int count_processes(void)
{
	struct dirent *de;
	DIR *d = opendir("/proc");
	int n = 0;

	while (d && (de = readdir(d)))
		n += atoi(de->d_name) > 0;
	if (d)
		closedir(d);
	return n;
}

static void test_fuse_served_by_stopped_jailed(void **state)
{
	struct harness *h = *state;
	double base;
	char mnt[96], data[128], *argv[] = { NULL, mnt, "serve", NULL };
	struct qj_conn *c = NULL;
	pid_t reader;

	REQUIRE_HARNESS(h);
	base = status_ms(h);
	for (int i = 0; i < 2; i++) { /* the fastest of three: the first pays for a cold start */
		double t = status_ms(h);

		base = t < base ? t : base;
	}
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	snprintf(data, sizeof(data), "%s/data", mnt);
	assert_int_equal(mkdir(mnt, 0755), 0);
	fuse_server = spawn_jailed(h, "server", "fuseserver", argv);
	for (int i = 0; i < CAP_MS / 10 && access(data, F_OK) < 0; i++)
		msleep(10);
	assert_int_equal(access(data, F_OK), 0);
	assert_int_equal(kill(fuse_server, SIGSTOP), 0); /* as the ladder would */

	reader = fork();
	assert_true(reader >= 0);
	if (reader == 0) {
		char buf[16];
		int fd = open(data, O_RDONLY | O_CLOEXEC);

		_exit(fd >= 0 && read(fd, buf, sizeof(buf)) > 0 ? 0 : 1);
	}
	harness_track(reader);
	expect_in_status(h, reader, fuse_server, "fuse");
	expect_in_explain(h, reader, fuse_server);
	msleep(1100); /* past the listing's cache: the next status scans */
	print_message("status with a jailed FUSE server (every thread's wchan read): %.2f ms, "
		      "fastest of 3 before it: %.2f ms, %d processes on the machine\n",
		      status_ms(h), base, count_processes());

	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_suspend(c), 0);
	qj_close(c);
	for (int i = 0; i < CAP_MS / 20 && !logged(h, reader, fuse_server); i++)
		msleep(20);
	if (!logged(h, reader, fuse_server)) {
		harness_dump_log(h);
		fail_msg("no kill log record of the trusted reader");
	}
	(void)kill(fuse_server, SIGCONT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_lock_held_by_stopped_jailed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fuse_served_by_stopped_jailed, setup,
						teardown),
	};
	int r = harness_need_root("integration/waiting");

	if (r >= 0)
		return r;
	if (access("/dev/fuse", R_OK | W_OK) < 0) {
		fprintf(stderr, "integration/waiting: no /dev/fuse%s\n",
			getenv("CI") ? "" : ", skipped");
		return getenv("CI") ? 1 : 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
