// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The privilege table (issue 11): every request of the protocol against every kind of
 * peer, with the expected answer of each pair in one table and checked in one place.
 *
 * Peers: root; the process's own user (uid 65534, a launcher in access.place and
 * access.suspend); another user (65532, in no list); a jailed process (65534, placed in
 * app "app" before it connects); and a connection whose connecting process (jailed,
 * 65534) exited after connecting, used by its child.  Requests that act on a process
 * (place, explain) target a process of uid 65534.  A root hold is kept during the table,
 * so suspend answers EBUSY where it is allowed and no cycle changes the answers.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon-harness.h"
#include "proto.h"
#include "qosjail.h"
#include "util.h"

#define OWN 65534
#define OTHER 65532

static const char policy[] = "version: 1\n"
			     "suspend: { backend: dry-run, idle_delay: 1h }\n"
			     "apps:\n"
			     "  - name: app\n"
			     "    match: { exe: \"/nonexistent/app\" }\n"
			     "    holds: { max: 4 }\n"
			     "access:\n"
			     "  place: { uids: [0, 65534] }\n"
			     "  suspend: { uids: [0, 65534] }\n"
			     "  reload: { uids: [0] }\n"
			     "  logs: { uids: [0] }\n"
			     "  delay: { uids: [0, 65534] }\n"
			     "  hold: \"*\"\n";

enum peer { ROOT, OWN_USER, OTHER_USER, JAILED, ORPHANED, _PEER_MAX };
enum op {
	HELLO,
	HOLD,
	RELEASE,
	STATUS,
	HOLDS,
	PLACE,
	SPAWN,
	LOG,
	RELOAD,
	SUSPEND,
	EXPLAIN,
	NOTIFY,
	METRICS,
	HISTORY,
	SUBSCRIBE,
	SUBSCRIBE_DELAY,
	READY,
	_OP_MAX
};

static const char *const peer_names[_PEER_MAX] = { "root", "own user", "other user", "jailed",
						   "connecting parent exited" };
/* Each row's op as the protocol spells it (common/proto.c), and its variant. */
static const char *const op_names[_OP_MAX] = {
	[HELLO] = "hello",
	[HOLD] = "hold",
	[RELEASE] = "release",
	[STATUS] = "status",
	[HOLDS] = "holds",
	[PLACE] = "place",
	[SPAWN] = "spawn",
	[LOG] = "log",
	[RELOAD] = "reload",
	[SUSPEND] = "suspend",
	[EXPLAIN] = "explain",
	[NOTIFY] = "notify",
	[METRICS] = "metrics",
	[HISTORY] = "history",
	[SUBSCRIBE] = "subscribe",
	[READY] = "ready",
	[SUBSCRIBE_DELAY] = "subscribe",
};
static const char *const variant_names[_OP_MAX] = { [SUBSCRIBE_DELAY] = " (delay)" };

/*
 * THE TABLE: 0 or the negative errno each peer gets for each request.  spawn of a user
 * other than root: clone3() into a cgroup the user may not write fails, and qj_spawn()
 * hands its waiting child over for the daemon to move (issue 28; integration/launcher).
 */
static const int expected[_OP_MAX][_PEER_MAX] = {
	/*             root     own user  other     jailed    parent exited */
	[HELLO] = { 0, 0, 0, 0, 0 },
	[HOLD] = { 0, 0, 0, 0, 0 },
	[RELEASE] = { 0, 0, 0, 0, 0 },
	[STATUS] = { 0, 0, 0, 0, 0 },
	[HOLDS] = { 0, 0, 0, 0, 0 },
	[PLACE] = { 0, 0, -EPERM, -EPERM, -EPERM },
	[SPAWN] = { 0, 0, -EPERM, -EPERM, -EPERM },
	[LOG] = { 0, -EPERM, -EPERM, -EPERM, -EPERM },
	[RELOAD] = { 0, -EPERM, -EPERM, -EPERM, -EPERM },
	[SUSPEND] = { -EBUSY, -EBUSY, -EPERM, -EBUSY, -EBUSY },
	[EXPLAIN] = { 0, 0, -EPERM, 0, 0 },
	/* For the caller itself, alive and jailed: not after its connecting parent exited. */
	[NOTIFY] = { -EPERM, -EPERM, -EPERM, 0, -ESRCH },
	/* Aggregates and hold names, as status and holds show them: to everyone. */
	[METRICS] = { 0, 0, 0, 0, 0 },
	[HISTORY] = { 0, 0, 0, 0, 0 },
	/* Anyone may watch the cycle, a jailed app too. */
	[SUBSCRIBE] = { 0, 0, 0, 0, 0 },
	/* A delay hold postpones every suspend: access.delay, never a jailed (or unknown) peer. */
	[SUBSCRIBE_DELAY] = { 0, 0, -EPERM, -EPERM, -EPERM },
	/* On the delay connection: no cycle waits (ESTALE); without a delay hold, ENOENT. */
	[READY] = { -ESTALE, -ESTALE, -ENOENT, -ENOENT, -ENOENT },
};

struct agent {
	const char *socket;
	enum peer peer;
	pid_t target;
	int go; /* read: placed (JAILED, ORPHANED) */
	int out; /* write: the child's pid (ORPHANED), then the results */
};

static int run_ops(struct qj_conn *c, struct qj_conn *c2, const struct agent *a,
		   int results[_OP_MAX])
{
	char *argv[] = { "/bin/true", NULL }, *text = NULL;
	pid_t pid;
	int fd = -1;

	results[HOLD] = qj_hold(c, "table", "privilege table", 0, QJ_HOLD_NONBLOCK);
	results[RELEASE] = qj_release(c, "table");
	results[STATUS] = qj_status(c, &text);
	free(text);
	text = NULL;
	results[HOLDS] = qj_holds(c, &text);
	free(text);
	text = NULL;
	results[PLACE] = qj_place(c, "app", a->target);
	results[SPAWN] = qj_spawn(c, "app", argv, &pid, NULL);
	if (results[SPAWN] == 0)
		waitpid(pid, NULL, 0);
	results[LOG] = qj_kill_log_open(c, &fd);
	if (fd >= 0)
		close(fd);
	results[RELOAD] = qj_reload(c, NULL);
	results[SUSPEND] = qj_suspend(c);
	results[EXPLAIN] = qj_explain(c, a->target, &text);
	free(text);
	results[NOTIFY] = qj_notify_consent(c);
	text = NULL;
	results[METRICS] = qj_metrics(c, &text);
	free(text);
	text = NULL;
	text = NULL;
	results[HISTORY] = qj_hold_history(c, &text);
	free(text);
	results[SUBSCRIBE] = qj_subscribe(c, 0);
	results[SUBSCRIBE_DELAY] = qj_subscribe(c2, QJ_SUBSCRIBE_DELAY);
	results[READY] = qj_ready(c2, 1);
	return 0;
}

static void agent_main(const struct agent *a)
{
	uid_t uid = a->peer == ROOT ? 0 : a->peer == OTHER_USER ? OTHER : OWN;
	int results[_OP_MAX] = {};
	struct qj_conn *c = NULL, *c2 = NULL;
	pid_t parent;
	char b;

	if (setgroups(1, &(gid_t){ (gid_t)uid }) < 0 || setresgid(uid, uid, uid) < 0 ||
	    setresuid(uid, uid, uid) < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		_exit(99);
	if (read(a->go, &b, 1) != 1)
		_exit(98);
	results[HELLO] = qj_open(a->socket, &c);
	if (results[HELLO] == 0)
		results[HELLO] = qj_open(a->socket, &c2); /* for the delay hold */
	if (a->peer == ORPHANED) {
		/* The connecting process goes; its child (same jail group) keeps the socket. */
		parent = getpid();
		if (fork() != 0)
			_exit(0);
		pid_t self = getpid();

		(void)!write(a->out, &self, sizeof(self));
		while (getppid() == parent)
			usleep(1000);
	}
	if (results[HELLO] == 0)
		run_ops(c, c2, a, results);
	(void)!write(a->out, results, sizeof(results));
	_exit(0);
}

static int setup(void **state)
{
	return harness_setup(state, policy);
}

static pid_t target_process(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		if (setresgid(OWN, OWN, OWN) < 0 || setresuid(OWN, OWN, OWN) < 0 ||
		    prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
			_exit(99);
		for (;;)
			pause();
	}
	harness_track(pid);
	return pid;
}

/* Runs one peer's agent and collects its answers. */
static void run_peer(struct harness *h, struct qj_conn *root, enum peer peer, pid_t target,
		     int results[_OP_MAX])
{
	struct agent a = { .socket = h->socket, .peer = peer, .target = target };
	int go[2], out[2];
	pid_t pid, child = 0;

	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	a.go = go[0];
	a.out = out[1];
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		agent_main(&a);
	harness_track(pid);
	close(go[0]);
	close(out[1]);
	if (peer == JAILED || peer == ORPHANED)
		assert_int_equal(qj_place(root, "app", pid), 0);
	assert_int_equal(write(go[1], "g", 1), 1);
	if (peer == ORPHANED) {
		assert_int_equal(read(out[0], &child, sizeof(child)), sizeof(child));
		harness_track(child);
		assert_int_equal(waitpid(pid, NULL, 0), pid); /* the connecting process exited */
	}
	assert_int_equal(read(out[0], results, sizeof(int) * _OP_MAX), sizeof(int) * _OP_MAX);
	close(go[1]);
	close(out[0]);
}

static void test_privilege_table(void **state)
{
	struct harness *h = *state;
	struct qj_conn *root = NULL;
	int got[_PEER_MAX][_OP_MAX];
	int bad = 0;
	pid_t target;

	REQUIRE_HARNESS(h);
	target = target_process();
	assert_int_equal(qj_open(h->socket, &root), 0);
	assert_int_equal(qj_hold(root, "keep-awake", "no cycle during the table", 0, 0), 0);
	for (int p = 0; p < _PEER_MAX; p++)
		run_peer(h, root, (enum peer)p, target, got[p]);
	/* The one place the answers are checked: every mismatch is printed, then it fails. */
	for (int o = 0; o < _OP_MAX; o++)
		for (int p = 0; p < _PEER_MAX; p++)
			if (got[p][o] != expected[o][p]) {
				print_error(
					"%s%-8s by %-25s: got %s (%d), want %s (%d)\n", op_names[o],
					variant_names[o] ? variant_names[o] : "", peer_names[p],
					got[p][o] ? strerrorname_np(-got[p][o]) : "ok", got[p][o],
					expected[o][p] ? strerrorname_np(-expected[o][p]) : "ok",
					expected[o][p]);
				bad++;
			}
	qj_close(root);
	if (bad)
		fail_msg("%d of %d answers differ from the privilege table", bad,
			 _OP_MAX * _PEER_MAX);
}

/*
 * The table covers the protocol: every op common/proto.c knows has a row here (by name),
 * and every row names an op it knows.  A new op without a row fails here, before anyone
 * has to remember to add one.
 */
static void test_table_covers_protocol(void **state)
{
	int missing = 0;

	(void)state;
	for (int i = 0; i < _QJ_OP_MAX; i++) {
		bool found = false;

		for (int o = 0; o < _OP_MAX; o++)
			found |= op_names[o] && strcmp(op_names[o], qj_op_to_string(i)) == 0;
		if (!found) {
			print_error("op \"%s\" of the protocol has no row in the privilege table\n",
				    qj_op_to_string(i));
			missing++;
		}
	}
	for (int o = 0; o < _OP_MAX; o++)
		if (!op_names[o] || qj_op_from_string(op_names[o]) < 0) {
			print_error("row %d names no op of the protocol\n", o);
			missing++;
		}
	if (missing)
		fail_msg("%d op(s) without a row, or rows without an op", missing);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_covers_protocol),
		cmocka_unit_test_setup_teardown(test_privilege_table, setup, harness_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
