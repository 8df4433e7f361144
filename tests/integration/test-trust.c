// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The trust boundary of qosjaild (issue 11), against a real daemon on the dry-run
 * backend, with clients running as root and as other uids (65534 and friends):
 * who may place which process, how jail membership of a peer is decided, the bounds
 * on clients and holds, and a SIGHUP during the backend write.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon-harness.h"
#include "holds.h"
#include "policy.h"
#include "util.h"
#include "proto.h"
#include "qosjail.h"

#define NOBODY 65534
#define LAUNCHED 65533 /* access.place_as lets NOBODY place these */
#define STRANGER 65532
/* App names of the longest allowed length (QJ_POLICY_NAME_MAX) and one less. */
#define LONG54 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define LONG55 LONG54 "a"
#define APP_NAME_63 LONG54 "-name-63c"
#define APP_NAME_64 LONG55 "-name-64c"

static const char policy_trust[] = "version: 1\n"
				   "suspend: { backend: dry-run, idle_delay: 1h, "
				   "dry_run_length: 1500ms }\n"
				   "apps:\n"
				   "  - name: app\n"
				   "    match: { exe: \"/nonexistent/app\" }\n"
				   "    holds: { max: 2 }\n"
				   "  - name: gone\n"
				   "    match: { exe: \"/nonexistent/gone\" }\n"
				   "    holds: { max: 5 }\n"
				   "  - name: " APP_NAME_63 "\n"
				   "    match: { exe: \"/nonexistent/n63\" }\n"
				   "    holds: { max: 1 }\n"
				   "  - name: " APP_NAME_64 "\n"
				   "    match: { exe: \"/nonexistent/n64\" }\n"
				   "    holds: { max: 1 }\n"
				   "access:\n"
				   "  place: { uids: [0, 65534] }\n"
				   "  place_as:\n"
				   "    - { launcher: 65534, uids: [65533] }\n"
				   "limits: { clients: 8, clients_per_uid: 4, holds_per_uid: 3, "
				   "holds_per_connection: 2 }\n";

static int setup(void **state)
{
	return harness_setup(state, policy_trust);
}

/* A process that sleeps with the given real, effective and saved uids. */
static pid_t spawn_as(uid_t ruid, uid_t euid, uid_t suid)
{
	int p[2];
	char b;
	pid_t pid;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* The death signal is set after the uid change, which clears it. */
		if (setresgid(ruid, ruid, ruid) < 0 || setresuid(ruid, euid, suid) < 0 ||
		    prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
			_exit(99);
		(void)!write(p[1], "r", 1);
		for (;;)
			pause();
	}
	harness_track(pid);
	close(p[1]);
	assert_int_equal(read(p[0], &b, 1), 1);
	close(p[0]);
	return pid;
}

/* The app @pid's explain answer names ("" when not jailed), as root sees it. */
static void jailed_app(struct harness *h, pid_t pid, char *buf, size_t size)
{
	struct qj_conn *c = NULL;
	char *text = NULL;
	json_t *j;

	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_explain(c, pid, &text), 0);
	j = json_loads(text, 0, NULL);
	assert_non_null(j);
	snprintf(buf, size, "%s",
		 json_is_true(json_object_get(j, "jailed")) ?
			 json_string_value(json_object_get(j, "app")) :
			 "");
	json_decref(j);
	free(text);
	qj_close(c);
}

/* ---- finding 2: place ------------------------------------------------------------------ */

struct place_case {
	struct harness *h;
	pid_t pid;
	int want; /* 0 or negative errno */
	const char *msg; /* in the error message */
};

static int place_as_caller(void *arg)
{
	struct place_case *pc = arg;
	struct qj_conn *c = NULL;
	int r;

	if (qj_open(pc->h->socket, &c) < 0)
		return 1;
	r = qj_place(c, "app", pc->pid);
	if (r != pc->want) {
		fprintf(stderr, "place %d: %d (%s), want %d\n", pc->pid, r, qj_last_error(c),
			pc->want);
		return 2;
	}
	if (pc->msg && !strstr(qj_last_error(c), pc->msg)) {
		fprintf(stderr, "place %d: message '%s' lacks '%s'\n", pc->pid, qj_last_error(c),
			pc->msg);
		return 3;
	}
	qj_close(c);
	return 0;
}

/*
 * A non-root launcher places only its own processes and those access.place_as names for
 * it; never root's (any of its uids), never a stranger's.  Root places any.
 */
static void test_place_only_own_processes(void **state)
{
	struct harness *h = *state;
	pid_t own, launched, stranger, root, setuid_root;
	char app[64];
	struct place_case cases[5];

	REQUIRE_HARNESS(h);
	own = spawn_as(NOBODY, NOBODY, NOBODY);
	launched = spawn_as(LAUNCHED, LAUNCHED, LAUNCHED);
	stranger = spawn_as(STRANGER, STRANGER, STRANGER);
	root = spawn_as(0, 0, 0);
	setuid_root = spawn_as(NOBODY, 0, 0); /* a setuid-root program the user started */
	cases[0] = (struct place_case){ h, own, 0, NULL };
	cases[1] = (struct place_case){ h, launched, 0, NULL };
	cases[2] = (struct place_case){ h, stranger, -EPERM, "runs as uid 65532" };
	cases[3] = (struct place_case){ h, root, -EPERM, "runs as root" };
	cases[4] = (struct place_case){ h, setuid_root, -EPERM, "runs as root" };
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(harness_run_as(NOBODY, place_as_caller, &cases[i]), 0);
	jailed_app(h, own, app, sizeof(app));
	assert_string_equal(app, "app");
	jailed_app(h, launched, app, sizeof(app));
	assert_string_equal(app, "app");
	for (size_t i = 2; i < 5; i++) {
		jailed_app(h, cases[i].pid, app, sizeof(app));
		assert_string_equal(app, "");
	}
	/* Root may place any process. */
	cases[2].want = 0;
	cases[2].msg = NULL;
	assert_int_equal(place_as_caller(&cases[2]), 0);
	jailed_app(h, stranger, app, sizeof(app));
	assert_string_equal(app, "app");
}

/* ---- finding 3: jail membership ------------------------------------------------------- */

/*
 * A worker process driven through pipes: 'c' connects (raw, no hello), 'h' takes a hold
 * (hello first if not done) and reports the reply's status, 'f' forks and lets the parent
 * exit (the child, which keeps the connection, reports its pid and goes on), 'x' exits.
 */
struct worker {
	pid_t pid;
	int cmd, res;
};

static void worker_main(const char *socket, int cmd, int res)
{
	int fd = -1, n = 0, r;
	bool hello = false;
	char c;

	while (read(cmd, &c, 1) == 1) {
		if (c == 'c') {
			fd = raw_connect(socket);
			r = fd >= 0 ? 0 : -errno;
		} else if (c == 'h') {
			char req[128], *rep;
			json_t *j;

			if (!hello) {
				free(raw_call(fd, "{\"op\":\"hello\",\"version\":1}", 26));
				hello = true;
			}
			snprintf(req, sizeof(req),
				 "{\"op\":\"hold\",\"name\":\"w%d\",\"reason\":\"test\"}", n++);
			rep = raw_call(fd, req, strlen(req));
			j = rep ? json_loads(rep, 0, NULL) : NULL;
			r = j ? qj_reply_status(j, NULL) : -EPROTO;
			json_decref(j);
			free(rep);
		} else if (c == 'f') {
			pid_t child = fork();

			if (child != 0)
				_exit(child < 0 ? 1 : 0);
			r = getpid();
		} else {
			_exit(0);
		}
		if (write(res, &r, sizeof(r)) != sizeof(r))
			_exit(1);
	}
	_exit(0);
}

static void worker_start(struct harness *h, struct worker *w)
{
	int cmd[2], res[2];

	assert_int_equal(pipe2(cmd, O_CLOEXEC), 0);
	assert_int_equal(pipe2(res, O_CLOEXEC), 0);
	w->pid = fork();
	assert_true(w->pid >= 0);
	if (w->pid == 0) {
		close(cmd[1]);
		close(res[0]);
		worker_main(h->socket, cmd[0], res[1]);
	}
	harness_track(w->pid);
	close(cmd[0]);
	close(res[1]);
	w->cmd = cmd[1];
	w->res = res[0];
}

static int worker_do(struct worker *w, char c)
{
	int r;

	assert_int_equal(write(w->cmd, &c, 1), 1);
	assert_int_equal(read(w->res, &r, sizeof(r)), sizeof(r));
	return r;
}

/* The worker's connecting process exits; its child (same jail group) keeps the socket. */
static void worker_fork_away(struct worker *w)
{
	pid_t old = w->pid, child = worker_do(w, 'f');

	assert_true(child > 0);
	assert_int_equal(waitpid(old, NULL, 0), old);
	w->pid = child;
	harness_track(child);
}

static void worker_stop(struct worker *w)
{
	close(w->cmd);
	close(w->res);
}

static void place_root(struct harness *h, const char *app, pid_t pid)
{
	struct qj_conn *c = NULL;

	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_place(c, app, pid), 0);
	qj_close(c);
}

/*
 * A jailed app (hold limit 2) connects, forks and exits: the child uses the connection.
 * The lookup of the exited pid used to fail with ESRCH and count as "not jailed"
 * (unlimited holds); membership is now decided at connect and kept.
 */
static void test_connecting_parent_exited_stays_jailed(void **state)
{
	struct harness *h = *state;
	struct worker w;

	REQUIRE_HARNESS(h);
	worker_start(h, &w);
	place_root(h, "app", w.pid);
	assert_int_equal(worker_do(&w, 'c'), 0);
	/* Accepted (the status connection is the other client) before the parent goes. */
	assert_true(harness_wait_int(h, "clients", 2, 5000) >= 2);
	worker_fork_away(&w);
	assert_int_equal(worker_do(&w, 'h'), 0);
	assert_int_equal(worker_do(&w, 'h'), 0);
	assert_int_equal(worker_do(&w, 'h'), -EDQUOT);
	worker_stop(&w);
}

/*
 * holds.max binds an app whose name has the longest allowed length: the daemon's
 * buffers for app names were 64 bytes, a 64-character name was cut, its app lookup
 * failed and the quota was never checked (63 characters got EDQUOT, 64 the hold).
 */
static void test_hold_limit_of_longest_app_name(void **state)
{
	static const char *const apps[] = { APP_NAME_63, APP_NAME_64 };
	struct harness *h = *state;
	char got[128];

	REQUIRE_HARNESS(h);
	assert_int_equal(strlen(APP_NAME_64), QJ_POLICY_NAME_MAX);
	for (size_t i = 0; i < ARRAY_SIZE(apps); i++) {
		struct worker w;

		print_message("app name of %zu characters\n", strlen(apps[i]));
		worker_start(h, &w);
		place_root(h, apps[i], w.pid);
		assert_int_equal(worker_do(&w, 'c'), 0);
		assert_int_equal(worker_do(&w, 'h'), 0);
		assert_int_equal(worker_do(&w, 'h'), -EDQUOT);
		jailed_app(h, w.pid, got, sizeof(got));
		assert_string_equal(got, apps[i]);
		worker_stop(&w);
	}
}

/*
 * The connecting process is gone before the daemon even accepts (the daemon is stopped
 * meanwhile): its membership can never be known, and an unknown peer gets no holds.
 */
static void test_peer_gone_before_accept_gets_no_holds(void **state)
{
	struct harness *h = *state;
	struct worker w;

	REQUIRE_HARNESS(h);
	worker_start(h, &w);
	place_root(h, "app", w.pid);
	assert_int_equal(kill(h->pid, SIGSTOP), 0);
	assert_int_equal(worker_do(&w, 'c'), 0);
	worker_fork_away(&w);
	assert_int_equal(kill(h->pid, SIGCONT), 0);
	assert_int_equal(worker_do(&w, 'h'), -EPERM);
	worker_stop(&w);
}

/* After a reload drops an app, processes still in its group get no holds (they had 5). */
static void test_jailed_app_dropped_by_reload_gets_no_holds(void **state)
{
	struct harness *h = *state;
	struct qj_conn *c = NULL;
	char *text = strdup(policy_trust), *cut;
	struct worker w;

	REQUIRE_HARNESS(h);
	worker_start(h, &w);
	place_root(h, "gone", w.pid);
	assert_int_equal(worker_do(&w, 'c'), 0);
	assert_int_equal(worker_do(&w, 'h'), 0);
	cut = strstr(text, "  - name: gone\n");
	memmove(cut, strstr(cut, "access:"), strlen(strstr(cut, "access:")) + 1);
	assert_int_equal(harness_write_policy(h, h->policy, text), 0);
	free(text);
	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_reload(c, NULL), 0);
	qj_close(c);
	assert_int_equal(worker_do(&w, 'h'), -EPERM);
	worker_stop(&w);
}

/* ---- finding 5: connection limits, out of fds ------------------------------------------ */

/* A process of @uid holding up to @n connections open until its pipe closes. */
struct conn_holder {
	pid_t pid;
	int release;
	int n_ok; /* connections it got */
	int error; /* the first refusal, 0 if none */
};

static void conn_holder_start(struct harness *h, uid_t uid, int n, struct conn_holder *ch)
{
	int rel[2], res[2], out[2];

	assert_int_equal(pipe2(rel, O_CLOEXEC), 0);
	assert_int_equal(pipe2(res, O_CLOEXEC), 0);
	ch->pid = fork();
	assert_true(ch->pid >= 0);
	if (ch->pid == 0) {
		gid_t g = (gid_t)uid;
		struct qj_conn *c;
		char b;

		close(rel[1]);
		close(res[0]);
		if (setgroups(1, &g) < 0 || setresgid(g, g, g) < 0 || setresuid(uid, uid, uid) < 0)
			_exit(99);
		out[0] = out[1] = 0;
		for (int i = 0; i < n; i++) {
			int r;

			c = NULL;
			r = qj_open(h->socket, &c); /* kept open until the process exits */

			if (r == 0)
				out[0]++;
			else if (!out[1])
				out[1] = r;
		}
		(void)!write(res[1], out, sizeof(out));
		(void)!read(rel[0], &b, 1);
		_exit(0);
	}
	harness_track(ch->pid);
	close(rel[0]);
	close(res[1]);
	ch->release = rel[1];
	assert_int_equal(read(res[0], out, sizeof(out)), sizeof(out));
	close(res[0]);
	ch->n_ok = out[0];
	ch->error = out[1];
}

static void conn_holder_stop(struct conn_holder *ch)
{
	/* A byte, not EOF: later holders inherited this pipe's write end. */
	assert_int_equal(write(ch->release, "x", 1), 1);
	close(ch->release);
	waitpid(ch->pid, NULL, 0);
}

/* limits: { clients: 8, clients_per_uid: 4 } for everyone but root. */
static void test_client_limits(void **state)
{
	struct harness *h = *state;
	struct conn_holder a, b, c;
	json_t *j;

	REQUIRE_HARNESS(h);
	conn_holder_start(h, NOBODY, 6, &a);
	assert_int_equal(a.n_ok, 4);
	assert_int_equal(a.error, -EUSERS);
	conn_holder_start(h, LAUNCHED, 4, &b);
	assert_int_equal(b.n_ok, 4);
	assert_int_equal(b.error, 0);
	conn_holder_start(h, STRANGER, 1, &c); /* 8 non-root connections already */
	assert_int_equal(c.n_ok, 0);
	assert_int_equal(c.error, -EUSERS);
	/* Root is still served. */
	j = harness_status(h);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "clients")), 9);
	json_decref(j);
	conn_holder_stop(&a);
	conn_holder_stop(&b);
	conn_holder_stop(&c);
	/* Room again once the daemon has seen them go (the status connection is one). */
	for (int i = 0; i < 500 && harness_wait_int(h, "clients", 0, 0) > 1; i++)
		msleep(10);
	conn_holder_start(h, STRANGER, 1, &c);
	assert_int_equal(c.n_ok, 1);
	conn_holder_stop(&c);
}

static int count_fds(pid_t pid)
{
	char path[64];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	d = opendir(path);
	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static int log_count_from(struct harness *h, long from, const char *text)
{
	char line[4096];
	FILE *f = fopen(h->log, "re");
	int n = 0;

	assert_non_null(f);
	fseek(f, from, SEEK_SET);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, text) != NULL;
	fclose(f);
	return n;
}

static long log_size(struct harness *h)
{
	struct stat st;

	return stat(h->log, &st) == 0 ? (long)st.st_size : 0;
}

/*
 * The daemon out of fds (its RLIMIT_NOFILE lowered): accept() failing with EMFILE used to
 * spin in the level-triggered loop (80% CPU, a log line per try).  Now the listener
 * pauses, one waiting peer is told why through the reserve fd, and when connections go
 * away the daemon serves again.
 */
static void test_out_of_fds_pauses_listener(void **state)
{
	struct harness *h = *state;
	struct rlimit rl, low;
	int fds[24], told = 0;
	long mark;
	json_t *j = NULL;

	REQUIRE_HARNESS(h);
	assert_int_equal(prlimit(h->pid, RLIMIT_NOFILE, NULL, &rl), 0);
	low = rl;
	low.rlim_cur = (rlim_t)count_fds(h->pid) + 4;
	mark = log_size(h);
	assert_int_equal(prlimit(h->pid, RLIMIT_NOFILE, &low, NULL), 0);
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++) {
		fds[i] = raw_connect(h->socket);
		assert_true(fds[i] >= 0);
	}
	/*
	 * One waiting peer is told why, through the reserve fd: at the first EMFILE, or at
	 * the retry a second later (accept() fails with EMFILE even when nobody waits).
	 */
	for (int waited = 0; told == 0 && waited < 5000; waited += 50) {
		msleep(50);
		for (size_t i = 0; i < ARRAY_SIZE(fds); i++) {
			char buf[512];
			ssize_t n = recv(fds[i], buf, sizeof(buf) - 1, MSG_DONTWAIT);

			if (n > 0) {
				buf[n] = '\0';
				told += strstr(buf, "out of file descriptors") != NULL;
			}
		}
	}
	if (told < 1) {
		harness_dump_log(h);
		fail_msg("no waiting peer was told the daemon is out of fds");
	}
	/* Not a line per failed accept() (tens of thousands): a few per retry second. */
	if (log_count_from(h, mark, "ccept") > 20) {
		harness_dump_log(h);
		fail_msg("%d log lines about accept", log_count_from(h, mark, "ccept"));
	}
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		close(fds[i]);
	assert_int_equal(prlimit(h->pid, RLIMIT_NOFILE, &rl, NULL), 0);
	for (int i = 0; i < 500 && !j; i++) {
		j = harness_status(h);
		if (!j)
			msleep(10);
	}
	assert_non_null(j);
	json_decref(j);
}

/* ---- finding 6: hold quotas, bounded listings ------------------------------------------ */

static int nobody_quota(void *arg)
{
	struct harness *h = arg;
	struct qj_conn *a = NULL, *b = NULL;

	if (qj_open(h->socket, &a) < 0 || qj_open(h->socket, &b) < 0)
		return 1;
	if (qj_hold(a, "q1", "r", 0, 0) != 0 || qj_hold(a, "q2", "r", 0, 0) != 0)
		return 2;
	if (qj_hold(a, "q3", "r", 0, 0) != -EDQUOT ||
	    !strstr(qj_last_error(a), "limits.holds_per_connection"))
		return 3;
	if (qj_hold(a, "q1", "refreshed", 0, 0) != 0) /* a refresh is no new hold */
		return 4;
	if (qj_hold(b, "q4", "r", 0, 0) != 0)
		return 5;
	if (qj_hold(b, "q5", "r", 0, 0) != -EDQUOT ||
	    !strstr(qj_last_error(b), "limits.holds_per_uid"))
		return 6;
	if (qj_release(a, "q2") != 0 || qj_hold(b, "q5", "r", 0, 0) != 0)
		return 7;
	qj_close(a);
	qj_close(b);
	return 0;
}

/*
 * limits.holds_per_connection 2 and holds_per_uid 3 for everyone but root; root's many
 * holds are listed only up to a fixed count (totals exact, "truncated"), so a listing
 * costs the same however many holds exist.
 */
static void test_hold_quotas_and_bounded_listing(void **state)
{
	struct harness *h = *state;
	struct qj_conn *root = NULL;
	char name[32];
	json_t *j;

	REQUIRE_HARNESS(h);
	assert_int_equal(harness_run_as(NOBODY, nobody_quota, h), 0);
	assert_int_equal(qj_open(h->socket, &root), 0);
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "root-%d", i);
		assert_int_equal(qj_hold(root, name, "many", 0, 0), 0);
	}
	j = harness_status(h);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "holds_total")), 300);
	assert_true(json_array_size(json_object_get(j, "holds")) <= 128);
	assert_true(json_is_true(json_object_get(j, "truncated")));
	json_decref(j);
	qj_close(root);
}

/*
 * Root is exempt from the quotas but not from the daemon's table: past QJ_HOLDS_MAX_NAMES
 * names held at once a hold is refused with ENOSPC, and the answer says which limit (it
 * used to print the name and reason lengths, "cannot take hold (128/512)").
 */
static void test_hold_table_full_says_why(void **state)
{
	struct harness *h = *state;
	struct qj_conn *root = NULL;
	char name[32];

	REQUIRE_HARNESS(h);
	assert_int_equal(qj_open(h->socket, &root), 0);
	for (int i = 0; i < QJ_HOLDS_MAX_NAMES; i++) {
		snprintf(name, sizeof(name), "n-%d", i);
		assert_int_equal(qj_hold(root, name, "fill", 0, 0), 0);
	}
	assert_int_equal(qj_hold(root, "one-more", "full", 0, 0), -ENOSPC);
	print_message("refusal: %s\n", qj_last_error(root));
	assert_non_null(strstr(qj_last_error(root), "4096 distinct names"));
	qj_close(root);
}

/* ---- finding 10: SIGHUP during the backend write --------------------------------------- */

/*
 * A SIGHUP while the (dry-run, 1.5 s) suspend write runs used to be refused and dropped;
 * it is now applied when the write returns.  The new policy's app proves it.
 */
static void test_sighup_during_write_is_deferred(void **state)
{
	struct harness *h = *state;
	_cleanup_free_ char *text = NULL;
	struct qj_conn *c = NULL;
	const char *acc;
	pid_t pid;
	int r = -1;

	REQUIRE_HARNESS(h);
	pid = spawn_as(0, 0, 0);
	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_place(c, "later", pid), -ENOENT);
	assert_int_equal(qj_suspend(c), 0);
	assert_true(harness_wait_state(h, "suspending", 5000));
	acc = strstr(policy_trust, "access:\n");
	assert_true(asprintf(&text,
			     "%.*s  - name: later\n    match: { exe: \"/nonexistent/later\" }\n%s",
			     (int)(acc - policy_trust), policy_trust, acc) > 0);
	assert_int_equal(harness_write_policy(h, h->policy, text), 0);
	assert_int_equal(kill(h->pid, SIGHUP), 0);
	assert_true(harness_wait_int(h, "suspends", 1, 5000) >= 1);
	for (int i = 0; i < 200 && r != 0; i++) {
		r = qj_place(c, "later", pid);
		if (r != 0)
			msleep(10);
	}
	if (r != 0) {
		harness_dump_log(h);
		fail_msg("the SIGHUP during the write was not applied: place gives %d", r);
	}
	qj_close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_place_only_own_processes, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_connecting_parent_exited_stays_jailed, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_peer_gone_before_accept_gets_no_holds, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_hold_limit_of_longest_app_name, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_jailed_app_dropped_by_reload_gets_no_holds,
						setup, harness_teardown),
		cmocka_unit_test_setup_teardown(test_client_limits, setup, harness_teardown),
		cmocka_unit_test_setup_teardown(test_out_of_fds_pauses_listener, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_hold_quotas_and_bounded_listing, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_sighup_during_write_is_deferred, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_hold_table_full_says_why, setup,
						harness_teardown),
	};

	if (getenv("QJ_TEST_FILTER")) /* e.g. QJ_TEST_FILTER='test_hold_*' */
		cmocka_set_test_filter(getenv("QJ_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
