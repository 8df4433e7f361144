// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The engine's step over a fake /proc and cgroup tree: observe, the rungs, the task
 * ladder and the group ladder, alone and on one app in one step.  The tasks are real
 * children of the test (pinned by pidfds, signalled for real); what the engine reads of
 * them (stat, status, schedstat, cgroup membership, the app's cpu.stat) is written by the
 * test under a temporary directory given to the engine as /proc (qj_procfs_set_root())
 * and as the cgroup2 mount (its fake /proc/self/mountinfo says so).  Time is simulated:
 * every step is given its "now".
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "engine.h"
#include "killlog.h"
#include "policy.h"
#include "procfs.h"
#include "util.h"

#include "jail-internal.h"

#define MS USEC_PER_MSEC
#define T0 (1000 * USEC_PER_SEC)
#define MAX_KIDS 4

/* A child the test started and what its fake /proc says of it. */
struct kid {
	pid_t pid;
	int pidfd;
	const char *app;
	char state;
	unsigned flags; /* PF_* of its stat */
	uint64_t cpu_ns;
	uint64_t voluntary, nonvoluntary;
	uint64_t sigpnd;
};

struct fixture {
	char dir[64]; /* the temporary tree: proc/, cg/, kill.log */
	char proc[96], cg[96], jail[128], logpath[128];
	struct qj_policy *p;
	struct qj_killlog *log;
	struct qj_engine *e;
	struct kid kids[MAX_KIDS];
	size_t n_kids;
	uint64_t app_usage[2]; /* usage_usec of apps a and b */
};

static void put(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Rewrites @path in place (the same inode: the engine keeps some of them open). */
static void put(const char *path, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int fd, n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < sizeof(buf));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, (size_t)n), n);
	assert_int_equal(close(fd), 0);
}

static void mkdirp(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void mkdirp(const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
}

/* /proc/PID/{stat,status,schedstat} and task/PID/stat from @k. */
static void kid_write(struct fixture *f, const struct kid *k)
{
	char path[PATH_MAX], stat[256];

	snprintf(stat, sizeof(stat), "%d (kid) %c 1 0 0 0 0 %u 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0\n",
		 k->pid, k->state, k->flags, k->pid);
	snprintf(path, sizeof(path), "%s/%d/stat", f->proc, k->pid);
	put(path, "%s", stat);
	snprintf(path, sizeof(path), "%s/%d/task/%d/stat", f->proc, k->pid, k->pid);
	put(path, "%s", stat);
	snprintf(path, sizeof(path), "%s/%d/status", f->proc, k->pid);
	put(path,
	    "Name:\tkid\nUid:\t0\t0\t0\t0\nSigPnd:\t%016llx\nShdPnd:\t0000000000000000\n"
	    "SigCgt:\t0000000000000000\nvoluntary_ctxt_switches:\t%llu\n"
	    "nonvoluntary_ctxt_switches:\t%llu\n",
	    (unsigned long long)k->sigpnd, (unsigned long long)k->voluntary,
	    (unsigned long long)k->nonvoluntary);
	snprintf(path, sizeof(path), "%s/%d/schedstat", f->proc, k->pid);
	put(path, "%llu 0 %llu\n", (unsigned long long)k->cpu_ns,
	    (unsigned long long)(k->voluntary + k->nonvoluntary + 1));
}

/* Starts a real child (it sleeps until killed) and lists it in @app's group. */
static struct kid *kid_new(struct fixture *f, const char *app)
{
	struct kid *k = &f->kids[f->n_kids++];
	char path[PATH_MAX], procs[256] = "";
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		for (;;)
			pause();
	}
	*k = (struct kid){ .pid = pid, .app = app, .state = 'S', .voluntary = 1 };
	k->pidfd = pidfd_open(pid, 0);
	assert_true(k->pidfd >= 0);
	mkdirp("%s/%d", f->proc, pid);
	mkdirp("%s/%d/task", f->proc, pid);
	mkdirp("%s/%d/task/%d", f->proc, pid, pid);
	snprintf(path, sizeof(path), "%s/%d/cgroup", f->proc, pid);
	put(path, "0::/jail/%s\n", app);
	snprintf(path, sizeof(path), "%s/%d/timerslack_ns", f->proc, pid);
	put(path, "50000\n");
	snprintf(path, sizeof(path), "%s/%d/exe", f->proc, pid);
	assert_int_equal(symlink("/usr/bin/qj-fake-kid", path), 0);
	kid_write(f, k);
	for (size_t i = 0; i < f->n_kids; i++)
		if (strcmp(f->kids[i].app, app) == 0)
			snprintf(procs + strlen(procs), sizeof(procs) - strlen(procs), "%d\n",
				 f->kids[i].pid);
	snprintf(path, sizeof(path), "%s/%s/cgroup.procs", f->jail, app);
	put(path, "%s", procs);
	return k;
}

/* One window of @k: busy spins the whole window in 'R', idle sleeps in 'S'. */
static void kid_window(struct fixture *f, struct kid *k, bool busy, uint64_t window_usec)
{
	k->state = busy ? 'R' : 'S';
	if (busy) {
		k->cpu_ns += window_usec * 1000;
		k->nonvoluntary += 10;
	} else {
		k->voluntary += 10;
	}
	kid_write(f, k);
}

static void app_usage(struct fixture *f, int app, uint64_t add_usec)
{
	char path[PATH_MAX];

	f->app_usage[app] += add_usec;
	snprintf(path, sizeof(path), "%s/%s/cpu.stat", f->jail, app ? "b" : "a");
	put(path, "usage_usec %llu\nuser_usec 0\nsystem_usec 0\n",
	    (unsigned long long)f->app_usage[app]);
}

/*
 * Did the real child stop (or continue) for a signal the engine sent?  The signal is
 * taken when the child next runs: waited for, up to a bound far past any scheduling delay.
 */
static bool kid_waited(const struct kid *k, int what)
{
	for (int i = 0; i < 10000; i++) {
		siginfo_t si = {};

		if (waitid(P_PIDFD, (id_t)k->pidfd, &si, what | WNOHANG) == 0 &&
		    si.si_pid == k->pid)
			return true;
		(void)usleep(1000);
	}
	return false;
}

static bool kid_dead(const struct kid *k)
{
	return qj_pidfd_exited(k->pidfd);
}

static const char policy_fmt[] = "version: 1\n"
				 "suspend:\n"
				 "  backend: dry-run\n"
				 "jail:\n"
				 "  cgroup: %s\n"
				 "  cpu_idle: false\n"
				 "  busy_threshold: 50%%\n"
				 "  sample_window: 300ms\n"
				 "escalation:\n"
				 "  ladder:\n"
				 "    - { action: SIGSTOP, grace: 300ms }\n"
				 "    - { action: SIGTERM, grace: 300ms }\n"
				 "    - { action: SIGKILL, grace: 300ms }\n"
				 "apps:\n"
				 "  - name: a\n"
				 "    match: { exe: \"/nonexistent/a\" }\n"
				 "  - name: b\n"
				 "    match: { exe: \"/nonexistent/b\" }\n";

/* fsync(2)s of the state file (the test links with -Wl,--wrap=fsync); all pass through. */
int __real_fsync(int fd);
int __wrap_fsync(int fd);
static unsigned state_fsyncs;

int __wrap_fsync(int fd)
{
	char link[64], path[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n > 0) {
		path[n] = 0;
		state_fsyncs += strstr(path, "/" STATE_FILE) != NULL;
	}
	return __real_fsync(fd);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct qj_diags diags = {};
	char text[2048], path[PATH_MAX];
	int n, r;

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/qj-engine-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->proc, sizeof(f->proc), "%s/proc", f->dir);
	snprintf(f->cg, sizeof(f->cg), "%s/cg", f->dir);
	snprintf(f->jail, sizeof(f->jail), "%s/jail", f->cg);
	snprintf(f->logpath, sizeof(f->logpath), "%s/log/kill.log", f->dir);
	mkdirp("%s", f->proc);
	mkdirp("%s/self", f->proc);
	mkdirp("%s", f->cg);
	snprintf(path, sizeof(path), "%s/self/mountinfo", f->proc);
	put(path, "30 1 0:26 / %s rw,nosuid - cgroup2 cgroup2 rw\n", f->cg);
	snprintf(path, sizeof(path), "%s/loadavg", f->proc);
	put(path, "0.00 0.00 0.00 1/100 1\n");
	assert_int_equal(qj_procfs_set_root(f->proc), 0);

	n = snprintf(text, sizeof(text), policy_fmt, f->jail);
	r = qj_policy_parse("test-engine", text, (size_t)n, &diags, &f->p);
	if (r < 0)
		qj_diags_print(&diags, stderr);
	qj_diags_done(&diags);
	assert_int_equal(r, 0);
	/* The kill log wants root's directories: the records are checked only as root. */
	if (getuid() == 0)
		assert_int_equal(qj_killlog_open(f->logpath, 1 << 20, 1, &f->log), 0);
	assert_int_equal(qj_engine_new(f->p, f->log, NULL, &f->e), 0);
	for (int app = 0; app < 2; app++) {
		snprintf(path, sizeof(path), "%s/%s/cgroup.events", f->jail, app ? "b" : "a");
		put(path, "populated 1\nfrozen 0\n");
		snprintf(path, sizeof(path), "%s/%s/cgroup.procs", f->jail, app ? "b" : "a");
		put(path, "%s", "");
		app_usage(f, app, 0);
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[PATH_MAX];

	(void)qj_engine_restore(f->e, "test");
	qj_engine_free(f->e);
	qj_killlog_free(f->log);
	qj_policy_free(f->p);
	for (size_t i = 0; i < f->n_kids; i++) {
		(void)pidfd_send_signal(f->kids[i].pidfd, SIGKILL, NULL, 0);
		(void)waitid(P_PIDFD, (id_t)f->kids[i].pidfd, &(siginfo_t){}, WEXITED);
		(void)close(f->kids[i].pidfd);
	}
	(void)qj_procfs_set_root(NULL);
	/* Only the test's own temporary tree (mkdtemp under /tmp). */
	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/* Does the kill log hold a record with all of @needles (NULL-terminated)? */
static bool logged(struct fixture *f, ...)
{
	_cleanup_free_ char *text = NULL;
	bool found = false;

	if (!f->log)
		return true; /* not root: no kill log to look at */
	assert_int_equal(qj_read_file(f->logpath, &text), 0);
	for (char *line = text, *next; line && *line && !found; line = next) {
		va_list ap;
		const char *needle;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		found = true;
		va_start(ap, f);
		while ((needle = va_arg(ap, const char *)))
			found &= strstr(line, needle) != NULL;
		va_end(ap);
	}
	return found;
}

static struct task *task_of(struct fixture *f, const struct kid *k)
{
	struct task *t = qj_eng_find_task(f->e, k->pid);

	assert_non_null(t);
	return t;
}

static int step(struct fixture *f, uint64_t now)
{
	uint64_t next = 0;
	int r = qj_engine_quiesce_step(f->e, now, &next);

	assert_true(r >= 0);
	assert_true(next > now);
	return r;
}

/* observe: what /proc says becomes the task's activity, window by window. */
static void test_observe_states(void **state)
{
	struct fixture *f = *state;
	struct kid *idle = kid_new(f, "a"), *busy = kid_new(f, "a"), *stopped = kid_new(f, "a");
	uint64_t now = T0;

	assert_int_equal(qj_engine_quiesce_begin(f->e, 1, now), 0);
	assert_int_equal(f->e->n_tasks, 3);
	/* The first look only opens a window. */
	assert_int_equal(qj_eng_observe(f->e, task_of(f, busy), now), 0);
	assert_int_equal(task_of(f, busy)->activity, QJ_TASK_UNKNOWN);
	now += 300 * MS;
	kid_window(f, idle, false, 300 * MS);
	kid_window(f, busy, true, 300 * MS);
	stopped->state = 'T';
	kid_write(f, stopped);
	for (size_t i = 0; i < f->e->n_tasks; i++)
		assert_int_equal(qj_eng_observe(f->e, &f->e->tasks[i], now), 0);
	assert_int_equal(task_of(f, idle)->activity, QJ_TASK_IDLE);
	assert_int_equal(task_of(f, busy)->activity, QJ_TASK_BUSY);
	assert_int_equal(task_of(f, stopped)->activity, QJ_TASK_STOPPED);
	/* A start time that no longer matches is another process: gone. */
	idle->state = 'S';
	{
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%d/stat", f->proc, idle->pid);
		put(path, "%d (kid) S 1 0 0 0 0 0 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0\n", idle->pid,
		    idle->pid + 1);
	}
	assert_int_equal(qj_eng_observe(f->e, task_of(f, idle), now + 300 * MS), 0);
	assert_true(task_of(f, idle)->gone);
	/* A real death: the pidfd says so before /proc does. */
	assert_int_equal(pidfd_send_signal(busy->pidfd, SIGKILL, NULL, 0), 0);
	assert_int_equal(waitid(P_PIDFD, (id_t)busy->pidfd, &(siginfo_t){}, WEXITED | WNOWAIT), 0);
	assert_int_equal(qj_eng_observe(f->e, task_of(f, busy), now + 300 * MS), 0);
	assert_int_equal(task_of(f, busy)->activity, QJ_TASK_GONE);
}

/* The task ladder: a busy task is stopped for real, and "blocked" once /proc says 'T'. */
static void test_task_rung_stop_blocked(void **state)
{
	struct fixture *f = *state;
	struct kid *k = kid_new(f, "a");
	uint64_t now = T0;

	assert_int_equal(qj_engine_quiesce_begin(f->e, 1, now), 0);
	assert_int_equal(step(f, now), 0);
	now += 300 * MS;
	kid_window(f, k, true, 300 * MS);
	app_usage(f, 0, 300 * MS);
	assert_int_equal(step(f, now), 0);
	assert_int_equal(task_of(f, k)->ladder.rung, 0);
	assert_true(task_of(f, k)->ladder.pending);
	assert_true(task_of(f, k)->undo.stopped);
	assert_true(kid_waited(k, WSTOPPED));
	assert_int_equal(f->e->apps[0].ladder.rung, -1); /* its task explains the app */
	k->state = 'T';
	kid_write(f, k);
	assert_int_equal(step(f, now + 10 * MS), 1);
	assert_false(task_of(f, k)->ladder.pending);
	assert_true(logged(f, "\"action\":\"SIGSTOP\"", "\"outcome\":\"blocked\"",
			   "\"rung_name\":\"", NULL));
	assert_int_equal(qj_engine_restore(f->e, "test"), 0);
	assert_true(kid_waited(k, WCONTINUED));
}

/*
 * A task's executable is read when it is first acted on, not when the quiesce begins
 * (10,000 tasks are tracked in one step): an idle one's is never read, and the record
 * of a task that exec'd since the beginning names what it runs when stopped.
 */
static void test_task_exe_read_when_acted(void **state)
{
	struct fixture *f = *state;
	struct kid *k = kid_new(f, "a"), *idle = kid_new(f, "b");
	char path[PATH_MAX];
	uint64_t now = T0;

	assert_int_equal(qj_engine_quiesce_begin(f->e, 1, now), 0);
	assert_null(task_of(f, k)->exe);
	assert_int_equal(step(f, now), 0);
	snprintf(path, sizeof(path), "%s/%d/exe", f->proc, k->pid);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink("/usr/bin/qj-fake-exec", path), 0);
	now += 300 * MS;
	kid_window(f, k, true, 300 * MS);
	kid_window(f, idle, false, 300 * MS);
	app_usage(f, 0, 300 * MS);
	assert_int_equal(step(f, now), 0);
	assert_true(kid_waited(k, WSTOPPED));
	assert_string_equal(task_of(f, k)->exe, "/usr/bin/qj-fake-exec");
	assert_null(task_of(f, idle)->exe);
	k->state = 'T';
	kid_write(f, k);
	assert_int_equal(step(f, now + 10 * MS), 1);
	assert_true(logged(f, "\"action\":\"SIGSTOP\"", "\"outcome\":\"blocked\"",
			   "\"exe\":\"/usr/bin/qj-fake-exec\"", NULL));
}

/*
 * The state file is rewritten at each change of what a restarted daemon must undo (it
 * reads it back from the page cache) but fsync'd only for a new strike: a reboot undoes
 * stops, slack and the CPU class itself, and 10,000 stops must not wait for the disk.
 */
/* An engine with a state file that stops @k, a spinner, and ends the quiesce. */
static void quiesce_one_spinner(struct fixture *f, struct kid *k)
{
	_cleanup_free_ char *text = NULL, *pid = NULL;
	char dir[128], path[PATH_MAX];
	uint64_t now = T0;

	snprintf(dir, sizeof(dir), "%s/state", f->dir);
	snprintf(path, sizeof(path), "%s/" STATE_FILE, dir);
	qj_engine_free(f->e);
	assert_int_equal(qj_engine_new(f->p, f->log, dir, &f->e), 0);
	state_fsyncs = 0;
	assert_int_equal(qj_engine_quiesce_begin(f->e, 1, now), 0);
	assert_int_equal(step(f, now), 0);
	now += 300 * MS;
	kid_window(f, k, true, 300 * MS);
	app_usage(f, 0, 300 * MS);
	assert_int_equal(step(f, now), 0);
	assert_true(kid_waited(k, WSTOPPED));
	assert_int_equal(qj_read_file(path, &text), 0);
	assert_true(asprintf(&pid, "\"pid\":%d,", k->pid) > 0);
	assert_non_null(strstr(text, pid));
	k->state = 'T';
	kid_write(f, k);
	assert_int_equal(step(f, now + 10 * MS), 1);
	assert_int_equal(state_fsyncs, 0);
}

static void test_state_file_synced_for_strikes(void **state)
{
	struct fixture *f = *state;
	struct kid *k = kid_new(f, "a");

	quiesce_one_spinner(f, k);
	/* The restore counts the app's strike, which must outlive a reboot. */
	assert_int_equal(qj_engine_restore(f->e, "test"), 0);
	assert_int_equal(state_fsyncs, 1);
	assert_true(kid_waited(k, WCONTINUED));
}

/* A cycle whose jail is kept (a dark wake) counts the strike as a restore does. */
static void test_state_file_synced_for_kept_strikes(void **state)
{
	struct fixture *f = *state;
	struct kid *k = kid_new(f, "a");

	quiesce_one_spinner(f, k);
	assert_int_equal(qj_engine_keep_quiesced(f->e, "test"), 0);
	assert_int_equal(state_fsyncs, 1);
	assert_true(logged(f, "\"action\":\"summary\"", "\"kept\":true", "\"stopped\":1", NULL));
	assert_int_equal(qj_engine_restore(f->e, "test"), 0);
	assert_true(kid_waited(k, WCONTINUED));
}

/*
 * A spinner starved at the idle class: runnable all window, given no slice, so its
 * CPU reads 0 ms.  Stopped as busy, and its record says it was starved rather than
 * "busy" beside 0 ms; a spinner that ran keeps "busy" and its figure.
 */
static void test_task_starved_reason(void **state)
{
	struct fixture *f = *state;
	struct kid *starved = kid_new(f, "a"), *ran = kid_new(f, "b");
	uint64_t now = T0;

	starved->state = 'R';
	starved->nonvoluntary = 10;
	kid_write(f, starved);
	assert_int_equal(qj_engine_quiesce_begin(f->e, 1, now), 0);
	assert_int_equal(step(f, now), 0);
	now += 300 * MS;
	kid_window(f, ran, true, 300 * MS);
	app_usage(f, 1, 300 * MS);
	assert_int_equal(step(f, now), 0);
	assert_int_equal(task_of(f, starved)->ladder.rung, 0);
	assert_int_equal(task_of(f, ran)->ladder.rung, 0);
	assert_true(kid_waited(starved, WSTOPPED) && kid_waited(ran, WSTOPPED));
	starved->state = ran->state = 'T';
	kid_write(f, starved);
	kid_write(f, ran);
	assert_int_equal(step(f, now + 10 * MS), 1);
	assert_true(
		logged(f, "\"app\":\"a\"", "\"reason\":\"busy, starved\"", "\"cpu_ms\":0,", NULL));
	assert_true(logged(f, "\"app\":\"b\"", "\"reason\":\"busy\"", "\"cpu_ms\":300,", NULL));
	assert_false(logged(f, "\"reason\":\"busy\"", "\"cpu_ms\":0,", NULL));
}

/*
 * A step before the first window can end reads nothing (10,000 stat reads judged
 * nothing): the kid's stat is unreadable then, and the step still asks for the
 * window's end.  An empty jail is quiet at once.
 */
static void test_step_waits_for_first_window(void **state)
{
	struct fixture *f = *state;
	struct kid *k;
	char path[PATH_MAX], moved[PATH_MAX + 8];
	uint64_t now = T0, next = 0;

	assert_int_equal(qj_engine_quiesce_begin(f->e, 1, now), 0);
	assert_int_equal(step(f, now), 1);
	assert_int_equal(qj_engine_restore(f->e, "test"), 0);
	k = kid_new(f, "a");
	assert_int_equal(qj_engine_quiesce_begin(f->e, 2, now), 0);
	snprintf(path, sizeof(path), "%s/%d/stat", f->proc, k->pid);
	snprintf(moved, sizeof(moved), "%s.away", path);
	assert_int_equal(rename(path, moved), 0);
	assert_int_equal(mkdir(path, 0755), 0); /* read(2) would fail: EISDIR */
	assert_int_equal(qj_engine_quiesce_step(f->e, now + 100 * MS, &next), 0);
	assert_int_equal(next, now + 300 * MS);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(rename(moved, path), 0);
	now += 300 * MS;
	kid_window(f, k, true, 300 * MS);
	app_usage(f, 0, 300 * MS);
	assert_int_equal(step(f, now), 0);
	assert_int_equal(task_of(f, k)->ladder.rung, 0);
	assert_true(kid_waited(k, WSTOPPED));
}

/*
 * A listed task that cannot be tracked (its stat unreadable: it exited meanwhile) closes
 * its own fds only: its sample's status fd was 0 until opened, and fd 0 was closed.
 */
static void test_untracked_task_keeps_fd0(void **state)
{
	struct fixture *f = *state;
	struct kid *k = kid_new(f, "a");
	int saved = dup(0), nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	struct stat before, after;
	char path[PATH_MAX];

	assert_true(saved >= 0 && nul >= 0);
	assert_int_equal(dup2(nul, 0), 0);
	assert_int_equal(fstat(0, &before), 0);
	snprintf(path, sizeof(path), "%s/%d/stat", f->proc, k->pid);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(qj_engine_quiesce_begin(f->e, 1, T0), 0);
	assert_int_equal(fstat(0, &after), 0);
	assert_true(after.st_dev == before.st_dev && after.st_ino == before.st_ino);
	assert_int_equal(dup2(saved, 0), 0);
	(void)close(saved);
	(void)close(nul);
}

/* Continued by another process: the task's own ladder goes on to SIGTERM. */
static void test_task_continued_escalates(void **state)
{
	struct fixture *f = *state;
	struct kid *k = kid_new(f, "a");
	uint64_t now = T0;

	assert_int_equal(qj_engine_quiesce_begin(f->e, 1, now), 0);
	assert_int_equal(step(f, now), 0);
	now += 300 * MS;
	kid_window(f, k, true, 300 * MS);
	assert_int_equal(step(f, now), 0);
	assert_true(kid_waited(k, WSTOPPED));
	/* Someone continued it: running, no stop pending, no thread in 'T'. */
	assert_int_equal(pidfd_send_signal(k->pidfd, SIGCONT, NULL, 0), 0);
	kid_window(f, k, true, 10 * MS);
	assert_int_equal(step(f, now + 10 * MS), 0);
	assert_int_equal(task_of(f, k)->ladder.rung, 1);
	assert_true(task_of(f, k)->killed_by_us);
	assert_true(
		logged(f, "\"action\":\"SIGSTOP\"", "\"outcome\":\"continued-by-other\"", NULL));
	assert_int_equal(waitid(P_PIDFD, (id_t)k->pidfd, &(siginfo_t){}, WEXITED | WNOWAIT), 0);
	assert_true(kid_dead(k));
	assert_int_equal(step(f, now + 20 * MS), 1);
	assert_true(logged(f, "\"action\":\"SIGTERM\"", "\"outcome\":\"killed\"", NULL));
}

/*
 * A task inside its exit as the stop came (a make's awk finishing): the kernel drops
 * the stop and it runs its way out.  Not "continued by another": no SIGTERM, and its
 * death is recorded as its own.
 */
static void test_task_exiting_not_continued(void **state)
{
	struct fixture *f = *state;
	struct kid *k = kid_new(f, "a");
	uint64_t now = T0;

	assert_int_equal(qj_engine_quiesce_begin(f->e, 1, now), 0);
	assert_int_equal(step(f, now), 0);
	now += 300 * MS;
	kid_window(f, k, true, 300 * MS);
	assert_int_equal(step(f, now), 0);
	assert_int_equal(task_of(f, k)->ladder.rung, 0);
	assert_true(kid_waited(k, WSTOPPED));
	/* Its stat now: running, PF_EXITING, no stop pending, no thread in 'T'. */
	k->flags = QJ_PF_EXITING;
	kid_window(f, k, true, 10 * MS);
	(void)step(f, now + 10 * MS);
	assert_int_equal(task_of(f, k)->ladder.rung, 0);
	assert_false(task_of(f, k)->killed_by_us);
	assert_false(logged(f, "\"outcome\":\"continued-by-other\"", NULL));
	assert_false(logged(f, "\"action\":\"SIGTERM\"", NULL));
	/* It dies on its own: the record says so. */
	assert_int_equal(pidfd_send_signal(k->pidfd, SIGKILL, NULL, 0), 0);
	assert_int_equal(waitid(P_PIDFD, (id_t)k->pidfd, &(siginfo_t){}, WEXITED | WNOWAIT), 0);
	(void)step(f, now + 20 * MS);
	assert_true(logged(f, "\"action\":\"SIGSTOP\"", "\"outcome\":\"exited\"", NULL));
	assert_false(logged(f, "\"outcome\":\"killed\"", NULL));
}

/* The group ladder: the app is busy and no task of it explains it: one sweep stops all. */
static void test_group_rung_sweep(void **state)
{
	struct fixture *f = *state;
	struct kid *k1 = kid_new(f, "a"), *k2 = kid_new(f, "a");
	uint64_t now = T0;

	assert_int_equal(qj_engine_quiesce_begin(f->e, 1, now), 0);
	assert_int_equal(step(f, now), 0);
	now += 300 * MS;
	kid_window(f, k1, false, 300 * MS);
	kid_window(f, k2, false, 300 * MS);
	app_usage(f, 0, 250 * MS); /* short-lived children came and went */
	assert_int_equal(step(f, now), 0);
	assert_int_equal(f->e->apps[0].ladder.rung, 0);
	assert_true(f->e->apps[0].g_sweeping);
	assert_int_equal(f->e->apps[0].g_n, 2);
	assert_true(kid_waited(k1, WSTOPPED));
	assert_true(kid_waited(k2, WSTOPPED));
	assert_true(task_of(f, k1)->by_group);
	assert_false(task_of(f, k1)->ladder.pending); /* the app's record covers it */
	assert_int_equal(task_of(f, k1)->ladder.rung, 0);
	/* cgroup.procs stable: the sweep ends; nothing of the app can run, it is quiesced. */
	k1->state = k2->state = 'T';
	kid_write(f, k1);
	kid_write(f, k2);
	assert_int_equal(step(f, now + 10 * MS), 1);
	assert_false(f->e->apps[0].g_sweeping);
	assert_true(f->e->apps[0].ladder.pending);
	assert_int_equal(qj_engine_restore(f->e, "test"), 0);
	assert_true(kid_waited(k1, WCONTINUED));
	assert_true(kid_waited(k2, WCONTINUED));
	assert_true(logged(f, "\"scope\":\"group\"", "\"action\":\"SIGSTOP\"",
			   "\"outcome\":\"restored\"", "\"tasks\":2", NULL));
}

/* Both ladders in one step: app a's group is stopped as a whole, app b's busy task alone. */
static void test_twin_ladders_two_apps(void **state)
{
	struct fixture *f = *state;
	struct kid *a1 = kid_new(f, "a"), *a2 = kid_new(f, "a"), *b1 = kid_new(f, "b");
	uint64_t now = T0;

	assert_int_equal(qj_engine_quiesce_begin(f->e, 1, now), 0);
	assert_int_equal(step(f, now), 0);
	now += 300 * MS;
	kid_window(f, a1, false, 300 * MS);
	kid_window(f, a2, false, 300 * MS);
	kid_window(f, b1, true, 300 * MS);
	app_usage(f, 0, 250 * MS);
	app_usage(f, 1, 300 * MS);
	assert_int_equal(step(f, now), 0);
	assert_int_equal(f->e->apps[0].ladder.rung, 0); /* group SIGSTOP on a */
	assert_true(f->e->apps[0].ladder.pending);
	assert_int_equal(task_of(f, a1)->ladder.rung, 0);
	assert_false(task_of(f, a1)->ladder.pending);
	assert_int_equal(f->e->apps[1].ladder.rung, -1); /* b1 explains its app */
	assert_int_equal(task_of(f, b1)->ladder.rung, 0);
	assert_true(task_of(f, b1)->ladder.pending);
	assert_true(kid_waited(a1, WSTOPPED));
	assert_true(kid_waited(a2, WSTOPPED));
	assert_true(kid_waited(b1, WSTOPPED));
	a1->state = a2->state = b1->state = 'T';
	kid_write(f, a1);
	kid_write(f, a2);
	kid_write(f, b1);
	assert_int_equal(step(f, now + 10 * MS), 1);
	assert_true(logged(f, "\"app\":\"b\"", "\"action\":\"SIGSTOP\"", "\"outcome\":\"blocked\"",
			   NULL));
}

/*
 * Both ladders on one app in one step: while the group's stop sweep runs, a task of it
 * continued by another goes on from the group's rung on its own ladder (SIGTERM), and the
 * sweep leaves it alone: its own ladder is further along.  (The sweep stopped it again,
 * logged its SIGTERM "ignored" the moment it was sent, took it for a fork outrunning the
 * sweep and sent the whole group SIGTERM.)  In the same step another app's busy task is
 * stopped by its own rung.
 */
static void test_twin_ladders_same_app(void **state)
{
	struct fixture *f = *state;
	struct kid *a1 = kid_new(f, "a"), *a2 = kid_new(f, "a"), *b1 = kid_new(f, "b");
	uint64_t now = T0;

	assert_int_equal(qj_engine_quiesce_begin(f->e, 1, now), 0);
	assert_int_equal(step(f, now), 0);
	now += 300 * MS;
	kid_window(f, a1, false, 300 * MS);
	kid_window(f, a2, false, 300 * MS);
	kid_window(f, b1, false, 300 * MS);
	app_usage(f, 0, 250 * MS);
	assert_int_equal(step(f, now), 0);
	assert_int_equal(f->e->apps[0].ladder.rung, 0); /* group SIGSTOP on a */
	assert_int_equal(f->e->apps[1].ladder.rung, -1);
	assert_true(kid_waited(a1, WSTOPPED));
	assert_true(kid_waited(a2, WSTOPPED));
	a2->state = 'T';
	kid_write(f, a2);
	/* a1 is continued by another process and spins; b1 turns busy on its own. */
	assert_int_equal(pidfd_send_signal(a1->pidfd, SIGCONT, NULL, 0), 0);
	kid_window(f, a1, true, 300 * MS);
	now += 300 * MS;
	kid_window(f, b1, true, 300 * MS);
	app_usage(f, 1, 300 * MS);
	assert_int_equal(step(f, now), 0);
	assert_int_equal(task_of(f, a1)->ladder.rung, 1); /* its own ladder, from the group's */
	assert_true(task_of(f, a1)->killed_by_us);
	assert_int_equal(f->e->apps[0].ladder.rung, 0); /* the group's stays */
	assert_false(f->e->apps[0].g_sweeping); /* every other task of a is stopped */
	assert_true(task_of(f, a1)->ladder.pending); /* its SIGTERM's record waits */
	if (f->log)
		assert_false(logged(f, "\"action\":\"SIGTERM\"", NULL));
	assert_int_equal(task_of(f, b1)->ladder.rung, 0); /* b's task rung, same step */
	assert_true(task_of(f, b1)->undo.stopped);
	assert_int_equal(f->e->apps[1].ladder.rung, -1); /* b1 explains its app */
	assert_true(kid_waited(b1, WSTOPPED));
	assert_int_equal(waitid(P_PIDFD, (id_t)a1->pidfd, &(siginfo_t){}, WEXITED | WNOWAIT), 0);
	b1->state = 'T';
	kid_write(f, b1);
	assert_int_equal(step(f, now + 10 * MS), 1);
	if (f->log) /* the SIGTERM took: killed, logged once, not "ignored" */
		assert_true(logged(f, "\"pid\":", "\"action\":\"SIGTERM\"",
				   "\"outcome\":\"killed\"", NULL));
	if (f->log)
		assert_false(logged(f, "\"action\":\"SIGTERM\"", "\"outcome\":\"ignored\"", NULL));
}

/* The rung operations table: one row an action, read by the step instead of its ifs. */
static void test_rung_ops_rows(void **state)
{
	struct fixture *f = *state;

	/* Every action of the table, not only the rungs of the fixture's policy. */
	for (int i = 0; i < _QJ_ACTION_MAX; i++) {
		const struct rung_ops *o = qj_eng_action_ops(i);
		const struct qj_action_info *info = qj_action_info(i);

		assert_non_null(o->task);
		/* A group form exactly where the action table says there is one. */
		assert_int_equal(info->group, o->group != NULL || o->sweep);
		assert_true(!o->sweep || o->reached);
	}
	for (int i = 0; i < (int)f->p->n_rungs; i++)
		assert_ptr_equal(qj_eng_rung_ops(f->e, i),
				 qj_eng_action_ops(f->p->rungs[i].action));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_observe_states, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_rung_stop_blocked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_starved_reason, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_exe_read_when_acted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_state_file_synced_for_kept_strikes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_state_file_synced_for_strikes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_step_waits_for_first_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_untracked_task_keeps_fd0, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_continued_escalates, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_exiting_not_continued, setup, teardown),
		cmocka_unit_test_setup_teardown(test_group_rung_sweep, setup, teardown),
		cmocka_unit_test_setup_teardown(test_twin_ladders_two_apps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_twin_ladders_same_app, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rung_ops_rows, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
