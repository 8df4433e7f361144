// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * An unprivileged launcher (issue 28): qosjailctl run as uid 65534, allowed by
 * access.place, starts its program in the jail with its stdin, stdout, stderr and exit
 * status; uid 65532 (in no list) is refused and its program never runs.  The hostile
 * launcher speaks the protocol itself (spawn with "child" and a passed pidfd): another
 * uid's process, root's, a sibling of its own uid, a /proc/PID fd, a pipe, no fd, a
 * reaped child, a zombie, a child whose pid went to a new child of the same launcher
 * (forced with ns_last_pid), and children that exit while being placed.  None of those
 * moves anything.  Last, a launcher told a wrong cgroup (a fake daemon) never execs.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup.h"
#include "daemon-harness.h"
#include "itest.h"
#include "proto.h"
#include "qosjail.h"
#include "util.h"

#define OWN 65534
#define OTHER 65532

static const char policy[] = "version: 1\n"
			     "suspend: { backend: dry-run, idle_delay: 1h }\n"
			     "apps:\n"
			     "  - name: app\n"
			     "access:\n"
			     "  place: { uids: [0, 65534] }\n"
			     "  hold: \"*\"\n";

/* The cgroup2 path of @pid ("0::" line of /proc/PID/cgroup) into @buf; "" when gone. */
static void v2_of(pid_t pid, char *buf, size_t size)
{
	char path[64], text[4096] = "";
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(text, sizeof(text), f))
		if (strncmp(text, "0::", 3) == 0) {
			text[strcspn(text, "\n")] = '\0';
			snprintf(buf, size, "%s", text + 3);
		}
	fclose(f);
}

static bool jailed(struct harness *h, pid_t pid)
{
	char cg[4096];
	const char *base = strrchr(h->it->cg_path, '/');

	v2_of(pid, cg, sizeof(cg));
	return base && strstr(cg, base) != NULL;
}

/* A process of @uid that waits to be killed (tracked: the teardown reaps it). */
static pid_t start_idle(uid_t uid)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		gid_t g = (gid_t)uid;

		if (setgroups(1, &g) < 0 || setresgid(g, g, g) < 0 || setresuid(uid, uid, uid) < 0)
			_exit(99);
		for (;;)
			pause();
	}
	harness_track(pid);
	return pid;
}

/* {"op":"spawn","app":"app","child":true} with @fd passed (none when negative): 0 or -errno. */
static int spawn_child(int sock, int fd)
{
	static const char msg[] = "{\"op\":\"spawn\",\"app\":\"app\",\"child\":true}";
	struct iovec iov = { .iov_base = (void *)msg, .iov_len = sizeof(msg) - 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	union qj_fd_control control;
	char reply[4096];
	json_t *j;
	ssize_t n;
	int r;

	if (fd >= 0)
		qj_proto_attach_fd(&mh, &control, fd);
	if (sendmsg(sock, &mh, MSG_NOSIGNAL) < 0)
		return -1000;
	n = recv(sock, reply, sizeof(reply) - 1, 0);
	if (n <= 0)
		return -1001;
	j = json_loadb(reply, (size_t)n, 0, NULL);
	if (!j)
		return -1002;
	r = json_is_true(json_object_get(j, "ok")) ?
		    0 :
		    -(int)json_integer_value(json_object_get(j, "errno"));
	json_decref(j);
	return r;
}

static int hello(const char *socket)
{
	static const char msg[] = "{\"op\":\"hello\",\"version\":1}";
	int fd = raw_connect(socket);
	char *r;

	if (fd < 0)
		return -1;
	r = raw_call(fd, msg, sizeof(msg) - 1);
	if (!r || !strstr(r, "true")) {
		free(r);
		close(fd);
		return -1;
	}
	free(r);
	return fd;
}

/* A child that waits on @go[0] (EOF), then exits 0; its pidfd in *ret_pidfd. */
static pid_t waiting_child(int *ret_pidfd, const int go[2])
{
	pid_t pid = fork();
	char c;

	if (pid == 0) {
		close(go[1]);
		(void)!read(go[0], &c, 1);
		_exit(0);
	}
	*ret_pidfd = pid > 0 ? pidfd_open(pid, 0) : -1;
	return pid;
}

struct hostile {
	const char *socket;
	pid_t other, root, sibling;
};

#define EXPECT(step, got, want)                                                              \
	do {                                                                                 \
		int got_ = (got);                                                            \
		if (got_ != (want)) {                                                        \
			fprintf(stderr, "step %d (%s): got %d, want %d\n", step, #got, got_, \
				want);                                                       \
			return step;                                                         \
		}                                                                            \
	} while (0)

/* The hostile launcher, as uid 65534: 0 when every answer was the right refusal. */
static int hostile_launcher(void *arg)
{
	const struct hostile *x = arg;
	int sock = hello(x->socket), fd, go[2], p[2], st;
	char path[64];
	pid_t child;

	if (sock < 0 || pipe(go) < 0 || pipe(p) < 0)
		return 50;
	EXPECT(1, spawn_child(sock, pidfd_open(x->other, 0)), -EPERM);
	EXPECT(2, spawn_child(sock, pidfd_open(x->root, 0)), -EPERM);
	EXPECT(3, spawn_child(sock, pidfd_open(x->sibling, 0)), -EPERM);
	EXPECT(4, spawn_child(sock, -1), -EBADF);
	EXPECT(5, spawn_child(sock, p[0]), -EBADF);
	child = waiting_child(&fd, go);
	snprintf(path, sizeof(path), "/proc/%d", child);
	EXPECT(6, spawn_child(sock, open(path, O_RDONLY | O_DIRECTORY)), -EBADF);
	/* A zombie, then the same child reaped. */
	kill(child, SIGKILL);
	usleep(100 * 1000);
	EXPECT(7, spawn_child(sock, fd), -ESRCH);
	waitpid(child, &st, 0);
	EXPECT(8, spawn_child(sock, fd), -ESRCH);
	close(fd);
	/* The connection handed to a child of ours, naming its own child: not ours. */
	child = fork();
	if (child == 0) {
		pid_t grandchild = waiting_child(&fd, go);

		_exit(grandchild > 0 && spawn_child(sock, fd) == -EPERM ? 0 : 1);
	}
	waitpid(child, &st, 0);
	EXPECT(9, WIFEXITED(st) ? WEXITSTATUS(st) : 2, 0);
	/* Our own waiting child: placed. */
	child = waiting_child(&fd, go);
	EXPECT(10, spawn_child(sock, fd), 0);
	close(go[1]);
	waitpid(child, &st, 0);
	close(fd);
	close(sock);
	return 0;
}

static void test_hostile_pidfds(void **state)
{
	struct harness *h = *state;
	struct hostile x;
	char before[3][4096], after[4096];

	REQUIRE_HARNESS(h);
	x = (struct hostile){ .socket = h->socket,
			      .other = start_idle(OTHER),
			      .root = start_idle(0),
			      .sibling = start_idle(OWN) };
	v2_of(x.other, before[0], sizeof(before[0]));
	v2_of(x.root, before[1], sizeof(before[1]));
	v2_of(x.sibling, before[2], sizeof(before[2]));
	assert_int_equal(harness_run_as(OWN, hostile_launcher, &x), 0);
	/* Nobody else moved. */
	v2_of(x.other, after, sizeof(after));
	assert_string_equal(after, before[0]);
	v2_of(x.root, after, sizeof(after));
	assert_string_equal(after, before[1]);
	v2_of(x.sibling, after, sizeof(after));
	assert_string_equal(after, before[2]);
	assert_true(harness_log_has(h, "is not a child of the caller"));
}

/*
 * PID reuse: the launcher's child exits and is reaped, root makes the launcher's next
 * child take the same pid (ns_last_pid); the old pidfd still names the dead child, so
 * the new one (same uid, same parent, same pid) is not moved.
 */
struct reuse {
	const char *socket;
	int to_root, from_root; /* pipes to and from the test's root side */
};

static int reuse_launcher(void *arg)
{
	const struct reuse *x = arg;
	int sock = hello(x->socket), fd, go[2], st, ok;
	pid_t child, again;
	char c;

	if (sock < 0 || pipe(go) < 0)
		return 50;
	for (int attempt = 0; attempt < 20; attempt++) {
		child = waiting_child(&fd, go);
		kill(child, SIGKILL);
		waitpid(child, &st, 0);
		if (write(x->to_root, &child, sizeof(child)) != sizeof(child) ||
		    read(x->from_root, &c, 1) != 1)
			return 51;
		again = fork();
		if (again == 0) {
			close(go[1]);
			(void)!read(go[0], &c, 1);
			_exit(0);
		}
		if (again != child) {
			close(fd);
			kill(again, SIGKILL);
			waitpid(again, &st, 0);
			continue;
		}
		ok = spawn_child(sock, fd) == -ESRCH;
		(void)!write(x->to_root, &again, sizeof(again));
		(void)!read(x->from_root, &c, 1); /* root looked at where it is */
		kill(again, SIGKILL);
		waitpid(again, &st, 0);
		return ok ? 0 : 1;
	}
	return 52; /* never got the pid back */
}

static void test_pid_reuse(void **state)
{
	struct harness *h = *state;
	int a[2], b[2], st;
	struct reuse x;
	pid_t launcher, pid;
	char last[32];

	REQUIRE_HARNESS(h);
	assert_int_equal(pipe(a), 0);
	assert_int_equal(pipe(b), 0);
	x = (struct reuse){ .socket = h->socket, .to_root = a[1], .from_root = b[0] };
	launcher = fork();
	assert_true(launcher >= 0);
	if (launcher == 0)
		_exit(harness_run_as(OWN, reuse_launcher, &x));
	close(a[1]);
	close(b[0]);
	while (read(a[0], &pid, sizeof(pid)) == sizeof(pid)) {
		snprintf(last, sizeof(last), "%d", pid - 1);
		if (qj_write_file("/proc/sys/kernel/ns_last_pid", last) < 0)
			break;
		assert_int_equal(write(b[1], "g", 1), 1);
		if (read(a[0], &pid, sizeof(pid)) != sizeof(pid))
			break;
		/* The launcher's new child at the old pid: not in the jail. */
		assert_false(jailed(h, pid));
		assert_int_equal(write(b[1], "g", 1), 1);
	}
	close(b[1]);
	assert_int_equal(waitpid(launcher, &st, 0), launcher);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	close(a[0]);
}

/* Children that exit at once, handed over while they go: placed or ESRCH, never else. */
static int racing_launcher(void *arg)
{
	int sock = hello(arg), fd, r, st;
	pid_t child;

	if (sock < 0)
		return 50;
	for (int i = 0; i < 100; i++) {
		child = fork();
		if (child == 0)
			_exit(0);
		fd = pidfd_open(child, 0);
		if (fd < 0 && errno == ESRCH)
			continue;
		r = spawn_child(sock, fd);
		close(fd);
		waitpid(child, &st, 0);
		if (r != 0 && r != -ESRCH) {
			fprintf(stderr, "racing child %d: %d\n", i, r);
			return 1;
		}
	}
	close(sock);
	return 0;
}

static void test_race_exit(void **state)
{
	struct harness *h = *state;

	REQUIRE_HARNESS(h);
	assert_int_equal(harness_run_as(OWN, racing_launcher, (void *)h->socket), 0);
}

static void read_all(int fd, char *buf, size_t size)
{
	size_t n = 0;
	ssize_t k;

	while (n < size - 1 && (k = read(fd, buf + n, size - 1 - n)) > 0)
		n += (size_t)k;
	buf[n] = '\0';
}

/* qosjailctl run as @uid, stdin "hello", stdout and stderr captured; its wait status. */
static int ctl_run_as(struct harness *h, uid_t uid, const char *script, char *out, size_t out_size,
		      char *err, size_t err_size)
{
	char ctl[512];
	int in[2], o[2], e[2], st, exe;
	pid_t pid;

	snprintf(ctl, sizeof(ctl), "%s/controller/qosjailctl", getenv("QJ_BUILD_DIR"));
	/*
	 * Opened here, as root, and run by its fd: the build tree may sit where uid 65534
	 * cannot reach it (/root/project in a fresh machine's chroot).
	 */
	exe = open(ctl, O_RDONLY | O_CLOEXEC);
	assert_true(exe >= 0);
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(o), 0);
	assert_int_equal(pipe(e), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		gid_t g = (gid_t)uid;

		dup2(in[0], 0);
		dup2(o[1], 1);
		dup2(e[1], 2);
		if (setgroups(1, &g) < 0 || setresgid(g, g, g) < 0 || setresuid(uid, uid, uid) < 0)
			_exit(99);
		char *argv[] = { ctl,  "--socket", h->socket, "run",	      "--app", "app",
				 "--", "/bin/sh",  "-c",      (char *)script, NULL };

		fexecve(exe, argv, environ);
		_exit(98);
	}
	close(exe);
	close(in[0]);
	close(o[1]);
	close(e[1]);
	assert_int_equal(write(in[1], "hello\n", 6), 6);
	close(in[1]);
	read_all(o[0], out, out_size);
	read_all(e[0], err, err_size);
	close(o[0]);
	close(e[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

static void test_run_as_nobody(void **state)
{
	struct harness *h = *state;
	char out[8192], err[4096], want[512];
	int st;

	REQUIRE_HARNESS(h);
	st = ctl_run_as(h, OWN,
			"grep ^0:: /proc/self/cgroup; read x; echo \"got $x as $(id -u)\"; "
			"echo oops >&2; exit 7",
			out, sizeof(out), err, sizeof(err));
	print_message("stdout: %sstderr: %s", out, err);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 7);
	snprintf(want, sizeof(want), "%s/app\n", strrchr(h->it->cg_path, '/'));
	assert_non_null(strstr(out, want));
	assert_non_null(strstr(out, "got hello as 65534"));
	assert_string_equal(err, "oops\n");
}

static void test_run_refused(void **state)
{
	struct harness *h = *state;
	char out[4096], err[4096], script[256], marker[128];
	int st;

	REQUIRE_HARNESS(h);
	snprintf(marker, sizeof(marker), "/tmp/qj-launcher-ran-%d", getpid());
	(void)unlink(marker);
	snprintf(script, sizeof(script), "touch %s", marker);
	st = ctl_run_as(h, OTHER, script, out, sizeof(out), err, sizeof(err));
	print_message("stderr: %s", err);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 1);
	assert_non_null(strstr(err, "Operation not permitted"));
	assert_int_equal(access(marker, F_OK), -1);
}

/*
 * A fake daemon that grants the spawn but names a cgroup the child is not in: the child
 * must not exec.  It hands the real jail's directory for the clone3() attempt, which
 * uid 65534 may not use (EACCES), so the handover runs.
 */
struct fake {
	int listen_fd;
	int cgroup_fd;
};

static void *fake_daemon(void *arg)
{
	const struct fake *f = arg;
	int c = accept4(f->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	char buf[4096];
	ssize_t n;

	while (c >= 0 && (n = recv(c, buf, sizeof(buf) - 1, 0)) > 0) {
		json_t *ok = json_pack("{s:b,s:i}", "ok", 1, "version", 1);

		buf[n] = '\0';
		if (strstr(buf, "\"child\""))
			json_object_set_new(ok, "cgroup", json_string("/not/the/jail"));
		(void)qj_proto_send(
			c, ok, strstr(buf, "spawn") && !strstr(buf, "child") ? f->cgroup_fd : -1);
		json_decref(ok);
	}
	if (c >= 0)
		close(c);
	return NULL;
}

struct lied {
	const char *socket, *marker;
};

static int lied_launcher(void *arg)
{
	const struct lied *l = arg;
	char *argv[] = { "/usr/bin/touch", (char *)l->marker, NULL };
	struct qj_conn *c = NULL;
	pid_t pid;
	int r;

	if (qj_open(l->socket, &c) < 0)
		return 50;
	r = qj_spawn(c, "app", argv, &pid, NULL);
	fprintf(stderr, "qj_spawn: %d (%s)\n", r, qj_last_error(c));
	qj_close(c);
	return r == -EIO ? 0 : 1;
}

static void test_child_checks_cgroup(void **state)
{
	struct harness *h = *state;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char marker[128];
	struct fake f;
	struct lied l;
	pthread_t t;

	REQUIRE_HARNESS(h);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/qj-fake-%d.sock", getpid());
	snprintf(marker, sizeof(marker), "/tmp/qj-launcher-lied-%d", getpid());
	(void)unlink(sa.sun_path);
	(void)unlink(marker);
	f.listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_true(f.listen_fd >= 0);
	assert_int_equal(bind(f.listen_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(chmod(sa.sun_path, 0666), 0);
	assert_int_equal(listen(f.listen_fd, 1), 0);
	f.cgroup_fd = open(h->it->cg_path, O_DIRECTORY | O_PATH | O_CLOEXEC);
	assert_true(f.cgroup_fd >= 0);
	assert_int_equal(pthread_create(&t, NULL, fake_daemon, &f), 0);
	l = (struct lied){ .socket = sa.sun_path, .marker = marker };
	assert_int_equal(harness_run_as(OWN, lied_launcher, &l), 0);
	pthread_join(t, NULL);
	assert_int_equal(access(marker, F_OK), -1);
	close(f.listen_fd);
	close(f.cgroup_fd);
	unlink(sa.sun_path);
}

static int setup(void **state)
{
	return harness_setup(state, policy);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run_as_nobody),  cmocka_unit_test(test_run_refused),
		cmocka_unit_test(test_hostile_pidfds), cmocka_unit_test(test_pid_reuse),
		cmocka_unit_test(test_race_exit),      cmocka_unit_test(test_child_checks_cgroup),
	};

	return cmocka_run_group_tests(tests, setup, harness_teardown);
}
