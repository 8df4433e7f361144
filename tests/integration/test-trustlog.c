// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The kill log and the daemon's outputs against hostile users, on a real
 * qosjaild (dry-run backend): the log op's fd while the log's path is swapped,
 * the socket's mode (issue 11 finding 4).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon-harness.h"
#include "qosjail.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_log_fd_from_writer_while_path_swapped,
						setup_logs, harness_teardown),
		cmocka_unit_test_setup_teardown(test_socket_mode, setup_logs, harness_teardown),
	};

	if (geteuid() != 0) {
		if (getenv("CI") && strcmp(getenv("CI"), "true") == 0) {
			fprintf(stderr, "integration/trustlog needs root (CI=true: failing)\n");
			return 1;
		}
		fprintf(stderr, "integration/trustlog needs root, skipped\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
