// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Adversaries in a real jail: programs that try, by accident or on purpose, to
 * keep the system awake past the jail.  For each: the quiesce ends (the engine's
 * "suspending") within the policy's bound, the jail's group then uses no CPU
 * over half a second, a jailed sleeper and a trusted busy process outside the
 * jail are not touched, and the restore leaves nothing stopped or frozen.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/param.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cgroup.h"
#include "itest.h"
#include "proc.h"
#include "test-policy.h"
#include "util.h"

#define GRACE (300 * USEC_PER_MSEC)
/* Generous: the machine is shared; the bound itself is checked by bench-evasion. */
#define TIMEOUT (60 * USEC_PER_SEC)

static int setup(void **state)
{
	*state = itest_new(GRACE);
	return 0;
}

static int teardown(void **state)
{
	itest_free(*state);
	return 0;
}

static uint64_t group_usage_usec(struct itest *t, const char *app)
{
	uint64_t v = 0;

	assert_int_equal(itest_usage_usec(t, app, &v), 0);
	return v;
}

/* Every thread of every process of @app: none stopped, and the group not frozen. */
static void assert_nothing_stopped(struct itest *t, const char *app)
{
	char dir[512];
	pid_t *pids = NULL;
	size_t n = 0;
	char path[600];

	snprintf(dir, sizeof(dir), "%s/%s", t->cg_path, app);
	assert_int_equal(itest_read_ll(dir, "cgroup.freeze"), 0);
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	assert_int_equal(qj_cgroup_read_pids(path, &pids, &n), 0);
	for (size_t i = 0; i < n; i++) {
		char st = 0;

		/* A SIGCONT takes effect when the task next runs: give it a moment. */
		for (int k = 0; k < 200; k++) {
			if (qj_proc_threads_state(pids[i], &st) < 0 || st != 'T')
				break;
			usleep(10 * 1000);
		}
		if (st == 'T')
			fail_msg("%d in %s still stopped after the restore", pids[i], app);
	}
	free(pids);
}

struct bystanders {
	pid_t sleeper; /* jailed, blocks in read(2) */
	pid_t trusted; /* busy, outside the jail */
};

static void bystanders_start(struct itest *t, struct bystanders *b)
{
	b->sleeper = itest_spawn(t, "qj-sleeper", "sleeper", NULL, 0);
	b->trusted = itest_spawn(t, "qj-busy", NULL, NULL, 0);
	assert_true(b->sleeper > 0 && b->trusted > 0);
}

static void bystanders_check(struct itest *t, const struct bystanders *b)
{
	char got[256];
	char s;

	assert_true(itest_log_of(t, b->sleeper, got, sizeof(got)) >= 0);
	assert_string_equal(got, "");
	assert_true(itest_log_of(t, b->trusted, got, sizeof(got)) >= 0);
	assert_string_equal(got, "");
	s = itest_state(b->sleeper);
	assert_true(s == 'S');
	s = itest_state(b->trusted);
	assert_true(s == 'R' || s == 'S');
}

/*
 * Quiesces with the adversary in app "adv" and checks the containment promise.
 * Returns the time the quiesce took.
 */
static uint64_t contain(struct itest *t, uint64_t cycle)
{
	uint64_t t0, took, u0, u1;
	int r;

	t0 = now_usec(CLOCK_MONOTONIC);
	r = itest_quiesce(t, cycle, TIMEOUT);
	took = now_usec(CLOCK_MONOTONIC) - t0;
	print_message("quiesce: %d after %" PRIu64 " ms\n", r, took / 1000);
	assert_int_equal(r, 1);
	/* Judged again once every signal has taken effect: still all blocked. */
	usleep(100 * 1000);
	{
		uint64_t next;

		assert_int_equal(qj_engine_quiesce_step(t->e, now_usec(CLOCK_MONOTONIC), &next), 1);
	}
	/* "Suspending": the jail runs nothing. */
	u0 = group_usage_usec(t, "adv");
	usleep(500 * 1000);
	u1 = group_usage_usec(t, "adv");
	print_message("adv group CPU over 500 ms while suspending: %" PRIu64 " us\n", u1 - u0);
	assert_true(u1 - u0 <= 8000); /* two 4 ms ticks of slop */
	assert_int_equal(qj_engine_restore(t->e, "resume"), 0);
	assert_nothing_stopped(t, "adv");
	return took;
}

static void start(struct itest *t)
{
	/*
	 * No idle CPU class: on a loaded machine it starves an adversary so much
	 * that it cannot even hop.  Containment must not depend on it.
	 */
	t->p->cpu_idle = false;
	/* Busy means 20% of a CPU: what an app gets of a loaded machine still counts. */
	t->p->busy_threshold = 0.2;
	qj_test_policy_add_app(t->p, "adv");
	qj_test_policy_add_app(t->p, "sleeper");
	assert_int_equal(itest_start_engine(t), 0);
}

/* pthread_exit() in main while two threads spin: stat says Z, the threads burn a CPU. */
static void test_main_thread_exit(void **state)
{
	struct itest *t = *state;
	struct bystanders b;
	char got[256];
	pid_t adv;

	ITEST_REQUIRE(t);
	start(t);
	bystanders_start(t, &b);
	adv = itest_spawn(t, "qj-mainexit", "adv", NULL, 0);
	assert_true(adv > 0);
	usleep(100 * 1000);
	assert_int_equal(itest_state(adv), 'Z');
	contain(t, 1);
	bystanders_check(t, &b);
	assert_true(itest_log_of(t, adv, got, sizeof(got)) >= 0);
	assert_string_equal(got, "SIGSTOP:blocked");
	/* Alive after the resume, its threads running again. */
	assert_int_equal(itest_state(adv), 'Z');
	{
		char st;

		assert_int_equal(qj_proc_threads_state(adv, &st), 0);
		assert_true(st == 'R' || st == 'S');
	}
}

/*
 * The notify rung only with consent.  A program that catches SIGXCPU to clean up and
 * die of it (GNU make does) is not notified when its policy does not say it
 * understands the notification: it is stopped and lives on after the resume.
 */
static void test_notify_needs_consent(void **state)
{
	struct itest *t = *state;
	char got[256];
	pid_t mk;

	ITEST_REQUIRE(t);
	start(t);
	mk = itest_spawn(t, "qj-cleanup", "adv", NULL, 0);
	assert_true(mk > 0);
	contain(t, 1);
	itest_pump_events(t, 500 * USEC_PER_MSEC);
	assert_true(itest_log_of(t, mk, got, sizeof(got)) >= 0);
	assert_string_equal(got, "SIGSTOP:blocked");
	assert_true(itest_state(mk) == 'R' || itest_state(mk) == 'S');
}

/*
 * With consent it is notified; it keeps spinning while it "cleans up", is stopped,
 * and dies of SIGXCPU after the resume: the kill log says so, with the signal.
 */
static void test_death_after_resume_logged(void **state)
{
	struct itest *t = *state;
	char got[256];
	pid_t mk;

	ITEST_REQUIRE(t);
	t->p->cpu_idle = false; /* measured, not starved, on a loaded machine */
	qj_test_policy_add_app(t->p, "adv")->notify = true;
	qj_test_policy_add_app(t->p, "sleeper");
	assert_int_equal(itest_start_engine(t), 0);
	if (qj_engine_procmon_fd(t->e) < 0)
		fail_msg("no process events (proc connector) here");
	mk = itest_spawn(t, "qj-cleanup", "adv", NULL, 0);
	assert_true(mk > 0);
	contain(t, 1);
	for (int i = 0; i < 50 && itest_state(mk) != 0 && itest_state(mk) != 'Z'; i++)
		itest_pump_events(t, 100 * USEC_PER_MSEC);
	itest_pump_events(t, 300 * USEC_PER_MSEC);
	assert_true(itest_log_of(t, mk, got, sizeof(got)) >= 0);
	/*
	 * Stopped by its own rung, or on a loaded machine by its app's group rung
	 * (whose record is the app's): either way notified first, killed last.
	 */
	if (strcmp(got, "SIGXCPU:ignored,SIGSTOP:blocked,exit:killed") != 0) {
		assert_string_equal(got, "SIGXCPU:ignored,exit:killed");
		assert_int_equal(itest_log_count_app(t, "adv", "SIGSTOP"), 1);
	}
	assert_int_equal(itest_log_count_reason(t, mk, "SIGXCPU"), 1);
}

/*
 * The exit record carries the process's status, as wait(2) would report it: its
 * leader exits alone with 255 after the resume and its last thread with 0
 * after that.  The last thread's exit event was taken for the process's and
 * the record said "status 0".
 */
static void test_exit_status_of_process(void **state)
{
	struct itest *t = *state;
	char got[256];
	pid_t adv;

	ITEST_REQUIRE(t);
	start(t);
	if (qj_engine_procmon_fd(t->e) < 0)
		fail_msg("no process events (proc connector) here");
	adv = itest_spawn(t, "qj-leaderexit", "adv", NULL, 0);
	assert_true(adv > 0);
	contain(t, 1);
	/* Until its last thread is gone too (its leader is a zombie before). */
	for (int i = 0; i < 50; i++) {
		char st = 0;

		if (qj_proc_threads_state(adv, &st) < 0 || st == 'Z')
			break;
		itest_pump_events(t, 100 * USEC_PER_MSEC);
	}
	itest_pump_events(t, 300 * USEC_PER_MSEC);
	assert_true(itest_log_of(t, adv, got, sizeof(got)) >= 0);
	assert_string_equal(got, "SIGSTOP:blocked,exit:exited");
	assert_int_equal(itest_log_count_reason(t, adv, "status 255"), 1);
}

/*
 * A death looked at before its exit event was read (a busy daemon, a loaded
 * machine: the pidfd turns readable after the event left, not after it was
 * read) is still logged with the signal the event carries, not as "exited":
 * the next cycle begins while the dead process's event waits in the socket.
 */
static void test_death_logged_from_its_event(void **state)
{
	struct itest *t = *state;
	char got[256];
	pid_t mk;

	ITEST_REQUIRE(t);
	t->p->cpu_idle = false;
	qj_test_policy_add_app(t->p, "adv")->notify = true;
	assert_int_equal(itest_start_engine(t), 0);
	if (qj_engine_procmon_fd(t->e) < 0)
		fail_msg("no process events (proc connector) here");
	mk = itest_spawn(t, "qj-cleanup", "adv", NULL, 0);
	assert_true(mk > 0);
	contain(t, 1);
	/* Dead (a zombie of ours: its pidfd is readable), its event not read yet. */
	for (int i = 0; i < 500 && itest_state(mk) != 'Z'; i++)
		usleep(10 * 1000);
	assert_int_equal(itest_state(mk), 'Z');
	assert_int_equal(qj_engine_quiesce_begin(t->e, 2, now_usec(CLOCK_MONOTONIC)), 0);
	itest_pump_events(t, 300 * USEC_PER_MSEC);
	assert_int_equal(qj_engine_restore(t->e, "test"), 0);
	itest_pump_events(t, 100 * USEC_PER_MSEC);
	assert_true(itest_log_of(t, mk, got, sizeof(got)) >= 0);
	/* As above: its own SIGSTOP, or its app's group SIGSTOP on a loaded machine. */
	if (strcmp(got, "SIGXCPU:ignored,SIGSTOP:blocked,exit:killed") != 0) {
		assert_string_equal(got, "SIGXCPU:ignored,exit:killed");
		assert_int_equal(itest_log_count_app(t, "adv", "SIGSTOP"), 1);
	}
	assert_int_equal(itest_log_count_reason(t, mk, "SIGXCPU"), 1);
}

/* Group records of app "adv" for @action, and the task count of the last one. */
static int group_records(struct itest *t, const char *action)
{
	return itest_log_count_app(t, "adv", action);
}

/*
 * App "adv" runs again after the resume: 10 ms of its CPU, given up to 10 s (beside two
 * hogs and another suite a hopper had less than 10 ms in the first 300 ms); an app left
 * stopped or frozen never gets there.
 */
static void assert_runs_after_resume(struct itest *t)
{
	uint64_t u0 = group_usage_usec(t, "adv"), u1 = u0;

	for (int i = 0; i < 200 && u1 - u0 <= 10 * 1000; i++) {
		usleep(50 * 1000);
		u1 = group_usage_usec(t, "adv");
	}
	print_message("adv group CPU after the resume: %" PRIu64 " us\n", u1 - u0);
	assert_true(u1 - u0 > 10 * 1000);
}

/* Work hopping to a fresh process every 20-100 ms: only the app's group sees it. */
static void test_hop_process(void **state)
{
	struct itest *t = *state;
	struct bystanders b;
	pid_t adv;

	ITEST_REQUIRE(t);
	start(t);
	bystanders_start(t, &b);
	adv = itest_spawn(t, "qj-hopper", "adv", NULL, 0);
	assert_true(adv > 0);
	usleep(200 * 1000);
	contain(t, 1);
	bystanders_check(t, &b);
	/* One group record says what was done to the app as a whole. */
	assert_true(group_records(t, "SIGSTOP") >= 1);
	/* It goes on hopping after the resume. */
	assert_runs_after_resume(t);
}

/* Kill-log records of app "adv" with outcome @outcome. */
static int count_outcome(struct itest *t, const char *outcome)
{
	FILE *f = fopen(t->log_path, "re");
	char *buf = NULL;
	size_t cap = 0;
	int n = 0;

	assert_non_null(f);
	while (getline(&buf, &cap, f) > 0) {
		json_t *rec = json_loads(buf, 0, NULL);
		const char *app = json_string_value(json_object_get(rec, "app"));
		const char *o = json_string_value(json_object_get(rec, "outcome"));

		if (app && o && strcmp(app, "adv") == 0 && strcmp(o, outcome) == 0)
			n++;
		json_decref(rec);
	}
	free(buf);
	fclose(f);
	return n;
}

/* Runs one adversary in app "adv" with the bystanders and checks the containment. */
static pid_t adversary(struct itest *t, const char *bin, bool alive_after)
{
	struct bystanders b;
	pid_t adv;

	start(t);
	bystanders_start(t, &b);
	adv = itest_spawn(t, bin, "adv", NULL, 0);
	assert_true(adv > 0);
	usleep(300 * 1000);
	contain(t, 1);
	itest_pump_events(t, 200 * USEC_PER_MSEC);
	bystanders_check(t, &b);
	/* Nothing was killed: stopped, then continued by the resume. */
	assert_int_equal(count_outcome(t, "killed"), 0);
	if (alive_after)
		assert_runs_after_resume(t);
	return adv;
}

static void test_hop_thread(void **state)
{
	ITEST_REQUIRE(*state);
	adversary(*state, "qj-hopthread", true);
}

static void test_daemonizer(void **state)
{
	ITEST_REQUIRE(*state);
	adversary(*state, "qj-daemonize", true);
}

static void test_duty_cycler(void **state)
{
	ITEST_REQUIRE(*state);
	adversary(*state, "qj-dutycycle", true);
	assert_true(itest_log_count_app(*state, "adv", "SIGSTOP") >= 1);
}

/*
 * The duty-cycler beside four CPU hogs this test starts outside the jail: on a
 * machine that busy each of its processes gets less than the threshold of a
 * CPU, and it ran 299 ms of every 500 ms while "suspending" (integration/adversary
 * failed at load 13-18).  Contained means the jail's CPU while suspending,
 * whatever else the machine does.
 */
static void test_duty_cycler_loaded(void **state)
{
	struct itest *t = *state;
	pid_t hog[4];

	ITEST_REQUIRE(t);
	for (size_t i = 0; i < ARRAY_SIZE(hog); i++) {
		hog[i] = itest_spawn(t, "qj-busy", NULL, NULL, 0);
		assert_true(hog[i] > 0);
	}
	adversary(t, "qj-dutycycle", true);
	assert_true(itest_log_count_app(t, "adv", "SIGSTOP") >= 1);
	for (size_t i = 0; i < ARRAY_SIZE(hog); i++) {
		char got[64];

		assert_true(itest_log_of(t, hog[i], got, sizeof(got)) >= 0);
		assert_string_equal(got, "");
	}
}

/*
 * The duty-cycler beside 24 CPU hogs this test starts outside the jail, on a
 * kernel without PSI for the jail (Debian's default, psi=0: no stall figure).
 * Held by the load, each of its processes gets 1-3% of a CPU and the app less
 * than the threshold of one CPU (20%): judged idle, it ran freely once the
 * load went away while "suspending" (299 ms of every 500 ms beside builds).
 * Its demand is judged against what it gets, a runnable task's share of the
 * loaded machine; a jailed sleeper beside it is not touched.  Contained means
 * the jail's CPU while suspending, whatever else the machine does.
 */
static void test_duty_cycler_share(void **state)
{
	struct itest *t = *state;
	char path[600], got[64];
	uint64_t u0, u1;
	pid_t hog[24], adv, sleeper;

	ITEST_REQUIRE(t);
	t->p->cpu_idle = false;
	t->p->busy_threshold = 0.2;
	qj_test_policy_add_app(t->p, "adv");
	qj_test_policy_add_app(t->p, "sleeper");
	assert_int_equal(itest_start_engine(t), 0);
	snprintf(path, sizeof(path), "%s/adv/cgroup.pressure", t->cg_path);
	if (access(path, W_OK) < 0)
		fail_msg("no cgroup.pressure (kernel before 6.5?): %s", strerror(errno));
	assert_int_equal(qj_write_file(path, "0"), 0);
	for (size_t i = 0; i < ARRAY_SIZE(hog); i++) {
		hog[i] = itest_spawn(t, "qj-busy", NULL, NULL, 0);
		assert_true(hog[i] > 0);
	}
	sleeper = itest_spawn(t, "qj-sleeper", "sleeper", NULL, 0);
	adv = itest_spawn(t, "qj-dutycycle", "adv", NULL, 0);
	assert_true(adv > 0 && sleeper > 0);
	usleep(300 * 1000);
	assert_int_equal(itest_quiesce(t, 1, TIMEOUT), 1);
	/* "Suspending": the machine's load goes away, the jail must still run nothing. */
	for (size_t i = 0; i < ARRAY_SIZE(hog); i++)
		assert_int_equal(kill(hog[i], SIGKILL), 0);
	u0 = group_usage_usec(t, "adv");
	usleep(500 * 1000);
	u1 = group_usage_usec(t, "adv");
	print_message("adv group CPU over 500 ms while suspending, the hogs gone: %" PRIu64 " us\n",
		      u1 - u0);
	assert_int_equal(qj_engine_restore(t->e, "resume"), 0);
	assert_true(u1 - u0 <= 8000);
	assert_true(itest_log_count_app(t, "adv", "SIGSTOP") >= 1);
	assert_true(itest_log_of(t, sleeper, got, sizeof(got)) >= 0);
	assert_string_equal(got, "");
}

static void test_short_spinners(void **state)
{
	ITEST_REQUIRE(*state);
	adversary(*state, "qj-spinners", true);
}

/* A `make -j2` build loop: stopped and continued, never killed (no SIGXCPU without consent). */
static void test_make_loop(void **state)
{
	struct itest *t = *state;
	char mk[256], cmd[512];
	FILE *f;

	ITEST_REQUIRE(t);
	snprintf(mk, sizeof(mk), "%s/Makefile", t->tmpdir);
	f = fopen(mk, "we");
	assert_non_null(f);
	fprintf(f, "all: a b c d\n"
		   "a b c d:\n"
		   "\t@awk 'BEGIN { for (i = 0; i < 3000000; i++) x += i }'\n");
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "cd %s && while :; do make -s -j2 -B all >/dev/null 2>&1 || exit 3; done",
		 t->tmpdir);
	setenv("QJ_RUN_CMD", cmd, 1);
	adversary(t, "qj-run", true);
}

/*
 * A shell pipeline of busy programs.  The shell itself only waits for them: it
 * started them, but they live on and are judged on their own, so it is not
 * acted on (it was logged "busy, 0 ms" as a forker).
 */
static void test_shell_pipeline(void **state)
{
	char got[256];
	pid_t sh;

	ITEST_REQUIRE(*state);
	setenv("QJ_RUN_CMD", "cat /dev/zero | gzip -1 | md5sum >/dev/null", 1);
	sh = adversary(*state, "qj-run", true);
	assert_true(itest_log_of(*state, sh, got, sizeof(got)) >= 0);
	assert_string_equal(got, "");
}

/* GET @path from 127.0.0.1:@port into @buf; true on an HTTP 200 answer. */
static bool http_get(int port, const char *path, char *buf, size_t size)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct timeval tv = { .tv_sec = 5 };
	char req[256];
	size_t len = 0;
	ssize_t n;
	int fd;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return false;
	}
	snprintf(req, sizeof(req),
		 "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		close(fd);
		return false;
	}
	while (len < size - 1 && (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = 0;
	close(fd);
	return strncmp(buf, "HTTP/1.1 200", 12) == 0 || strncmp(buf, "HTTP/1.0 200", 12) == 0;
}

/*
 * Headless Chromium (Debian's) on a page that spins in JavaScript and in a worker:
 * contained, and after the resume the browser is alive and answers on its DevTools
 * port with the page still there; nothing of it was killed, by the kill log.
 */
static void test_chromium(void **state)
{
	struct itest *t = *state;
	int port = 20000 + getpid() % 20000;
	char page[256], cmd[1024], buf[8192];
	struct bystanders b;
	bool up = false;

	ITEST_REQUIRE(t);
	if (access("/usr/bin/chromium", X_OK) < 0) {
		if (itest_ci())
			fail_msg("chromium not installed (scripts/setup installs it)");
		print_message("skipped: no /usr/bin/chromium (scripts/setup installs it)\n");
		skip();
	}
	snprintf(page, sizeof(page), "%s/spin.html", t->tmpdir);
	assert_int_equal(itest_write_spin_page(page), 0);
	snprintf(cmd, sizeof(cmd),
		 "exec /usr/bin/chromium --headless=new --no-sandbox --disable-gpu --no-first-run "
		 "--user-data-dir=%s/chromium --remote-debugging-port=%d file://%s "
		 ">/dev/null 2>&1",
		 t->tmpdir, port, page);
	setenv("QJ_RUN_CMD", cmd, 1);
	start(t);
	bystanders_start(t, &b);
	assert_true(itest_spawn(t, "qj-run", "adv", NULL, 0) > 0);
	for (int i = 0; i < 600 && !up; i++) {
		up = http_get(port, "/json/list", buf, sizeof(buf)) && strstr(buf, "spin.html");
		if (!up)
			usleep(100 * 1000);
	}
	assert_true(up);
	usleep(1000 * 1000); /* the page spinning */
	contain(t, 1);
	itest_pump_events(t, 500 * USEC_PER_MSEC);
	bystanders_check(t, &b);
	/* Alive and answering, the page still open. */
	up = false;
	for (int i = 0; i < 100 && !up; i++) {
		up = http_get(port, "/json/list", buf, sizeof(buf)) && strstr(buf, "spin.html");
		if (!up)
			usleep(100 * 1000);
	}
	assert_true(up);
	itest_pump_events(t, 1000 * USEC_PER_MSEC);
	assert_int_equal(count_outcome(t, "killed"), 0);
	assert_true(http_get(port, "/json/version", buf, sizeof(buf)));
}

/* Processes created on the whole machine so far (/proc/stat "processes"). */
/* What the storm wrote to its count file: processes it started so far. */
static long storm_started(const char *path)
{
	char *s = NULL;
	long v = 0;

	if (qj_read_file(path, &s) == 0)
		v = strtol(s, NULL, 10);
	free(s);
	return v;
}

/*
 * Events the kernel dropped on the engine's process-event socket (the Drops
 * column of /proc/net/netlink, found by the socket's inode): each drop is an
 * overrun the engine must have resynchronised after.
 */
static long socket_drops(int fd, long *ret_rmem)
{
	char *s = NULL, *line, *save = NULL;
	struct stat st;
	long drops = -1;

	if (fd < 0 || fstat(fd, &st) < 0 || qj_read_file("/proc/net/netlink", &s) < 0)
		return -1;
	for (line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long f[9];
		unsigned long ino;
		char sk[32];

		/* sk Eth Pid Groups Rmem Wmem Dump Locks Drops Inode */
		if (sscanf(line, "%31s %llu %llu %llx %llu %llu %llu %llu %llu %lu", sk, &f[0],
			   &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &ino) == 10 &&
		    ino == (unsigned long)st.st_ino) {
			drops = (long)f[7];
			*ret_rmem = (long)f[3];
			break;
		}
	}
	free(s);
	return drops;
}

/*
 * A fork storm: 10,000 processes started as fast as they can be, each an exec event,
 * unread by the engine while it lasts (the daemon busy elsewhere): the event socket
 * may overrun, and the resync from /proc and cgroup.procs must hold.  Then the storm
 * goes on at its pace and is contained like any other app.
 */
static void test_fork_storm(void **state)
{
	struct itest *t = *state;
	struct qj_engine_counts c = {};
	struct bystanders b;
	char count[200];
	uint64_t t0, end, q0, step_max = 0, pump_max = 0, late_max = 0;
	long started, drops, rmem = 0;
	unsigned steps = 0;
	int r = 0;

	ITEST_REQUIRE(t);
	start(t);
	bystanders_start(t, &b);
	/*
	 * The daemon's 8 MiB buffer (16 MiB charged, about 870 bytes an exec event:
	 * ~19,000 events) outlasts the ~16,000 processes a loaded 2-CPU machine starts
	 * in 30 s; at 2 MiB, 10,000 unread events overrun it for sure.
	 */
	assert_int_equal(setsockopt(qj_engine_procmon_fd(t->e), SOL_SOCKET, SO_RCVBUFFORCE,
				    &(int){ 2 * 1024 * 1024 }, sizeof(int)),
			 0);
	snprintf(count, sizeof(count), "%s/storm-count", t->tmpdir);
	assert_int_equal(setenv("QJ_STORM_COUNT", count, 1), 0);
	assert_true(itest_spawn(t, "qj-forkstorm", "adv", NULL, 0) > 0);
	(void)unsetenv("QJ_STORM_COUNT");
	/*
	 * At least 10,000 processes started by the storm without reading events, and
	 * on until the socket overruns; at most 30 s on a machine shared with builds.
	 */
	t0 = now_usec(CLOCK_MONOTONIC);
	end = t0 + 30 * USEC_PER_SEC;
	do {
		usleep(100 * 1000);
		started = storm_started(count);
		drops = socket_drops(qj_engine_procmon_fd(t->e), &rmem);
	} while ((started < 10000 || drops <= 0) && now_usec(CLOCK_MONOTONIC) < end);
	print_message("storm: %ld started in %" PRIu64
		      " ms, %ld events dropped, %ld bytes queued\n",
		      started, (now_usec(CLOCK_MONOTONIC) - t0) / 1000, drops, rmem);
	itest_pump_events(t, 200 * USEC_PER_MSEC);
	assert_int_equal(qj_engine_counts(t->e, &c), 0);
	print_message("process-event overruns resynchronised: %u\n", c.resyncs);
	/* The kernel counted an overrun: the engine saw it and resynchronised. */
	assert_true(drops > 0);
	assert_true(c.resyncs >= 1);
	/* Quiesce while events keep coming: the daemon reads them between steps. */
	q0 = now_usec(CLOCK_MONOTONIC);
	r = qj_engine_quiesce_begin(t->e, 1, q0);
	assert_int_equal(r, 0);
	end = now_usec(CLOCK_MONOTONIC) + TIMEOUT;
	for (;;) {
		uint64_t next, s0 = now_usec(CLOCK_MONOTONIC), s1;

		itest_pump_events(t, 0);
		s1 = now_usec(CLOCK_MONOTONIC);
		r = qj_engine_quiesce_step(t->e, s1, &next);
		steps++;
		pump_max = MAX(pump_max, s1 - s0);
		step_max = MAX(step_max, now_usec(CLOCK_MONOTONIC) - s1);
		if (r != 0 || now_usec(CLOCK_MONOTONIC) > end)
			break;
		while (now_usec(CLOCK_MONOTONIC) < next && now_usec(CLOCK_MONOTONIC) < end) {
			uint64_t p0 = now_usec(CLOCK_MONOTONIC);
			uint64_t want = MIN(next - p0, 50 * USEC_PER_MSEC);

			itest_pump_events(t, want);
			pump_max = MAX(pump_max, now_usec(CLOCK_MONOTONIC) - p0 - want);
		}
		late_max = MAX(late_max,
			       now_usec(CLOCK_MONOTONIC) - MIN(next, now_usec(CLOCK_MONOTONIC)));
	}
	print_message("quiesce: %" PRIu64 " ms in %u steps, longest step %" PRIu64
		      " ms, event reads overran by %" PRIu64 " ms, steps late by %" PRIu64 " ms\n",
		      (now_usec(CLOCK_MONOTONIC) - q0) / 1000, steps, step_max / 1000,
		      pump_max / 1000, late_max / 1000);
	assert_int_equal(r, 1);
	{
		uint64_t u0 = group_usage_usec(t, "adv"), u1;

		usleep(500 * 1000);
		u1 = group_usage_usec(t, "adv");
		print_message("adv group CPU over 500 ms while suspending: %" PRIu64 " us\n",
			      u1 - u0);
		assert_true(u1 - u0 <= 8000);
	}
	assert_int_equal(qj_engine_restore(t->e, "resume"), 0);
	assert_nothing_stopped(t, "adv");
	bystanders_check(t, &b);
}

/*
 * A stop the main thread has not taken yet: the worker thread took the SIGSTOP
 * and stopped, the main thread waits in vfork ('D') until its child exits.
 * Neither /proc/PID/stat nor the pending sets say "stopped"; that is not a
 * SIGCONT from another process.  Taken for one, the app was escalated and the
 * restore did not continue it (the fork storm's task left stopped: its stop was
 * dequeued between the engine's two reads).
 */
static void test_stop_taken_by_another_thread(void **state)
{
	struct itest *t = *state;
	struct bystanders b;
	char got[256];
	pid_t adv;

	ITEST_REQUIRE(t);
	start(t);
	bystanders_start(t, &b);
	adv = itest_spawn(t, "qj-waitmain", "adv", NULL, 0);
	assert_true(adv > 0);
	contain(t, 1);
	bystanders_check(t, &b);
	assert_true(itest_log_of(t, adv, got, sizeof(got)) >= 0);
	assert_string_equal(got, "SIGSTOP:blocked");
}

/* The private FUSE mount of test_d_state_thread, detached by its teardown. */
static char fuse_dir[128];

static int teardown_fuse(void **state)
{
	/* The server dies with the teardown; its reader's read then fails. */
	if (fuse_dir[0])
		(void)umount2(fuse_dir, MNT_DETACH);
	fuse_dir[0] = 0;
	return teardown(state);
}

/*
 * A process with one thread stuck in 'D' on a FUSE read that is never answered
 * (a private server outside the jail) and one busy thread, and an idle sleeper
 * in the same app.  The busy thread is stopped; the 'D' thread never joins the
 * group stop, but it runs nothing: the quiesce ends ("suspending"), no
 * quiesce-timeout.  It once held the app's verdict open ("group stop under
 * way") until the bound, every cycle, for as long as the read stayed stuck.
 */
static void test_d_state_thread(void **state)
{
	struct itest *t = *state;
	char file[160], got[256];
	pid_t adv, server, sleeper;

	ITEST_REQUIRE(t);
	if (access("/dev/fuse", R_OK | W_OK) < 0)
		fail_msg("no /dev/fuse: %s", strerror(errno));
	/* The mount lives in this test's own mount namespace only. */
	assert_int_equal(unshare(CLONE_NEWNS), 0);
	assert_int_equal(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	snprintf(fuse_dir, sizeof(fuse_dir), "%s/fuse", t->tmpdir);
	assert_int_equal(mkdir(fuse_dir, 0755), 0);
	assert_int_equal(setenv("QJ_FUSE_DIR", fuse_dir, 1), 0);
	start(t);
	server = itest_spawn(t, "qj-fusehang", NULL, NULL, 0);
	assert_true(server > 0);
	snprintf(file, sizeof(file), "%s/stuck", fuse_dir);
	assert_int_equal(setenv("QJ_FUSE_FILE", file, 1), 0);
	adv = itest_spawn(t, "qj-fusereader", "adv", NULL, 0);
	assert_true(adv > 0);
	sleeper = itest_spawn(t, "qj-sleeper", "adv", NULL, 0);
	assert_true(sleeper > 0);
	usleep(200 * 1000);
	contain(t, 1);
	assert_int_equal(itest_log_count_app(t, "adv", "quiesce-timeout"), 0);
	assert_true(itest_log_of(t, adv, got, sizeof(got)) >= 0);
	assert_string_equal(got, "SIGSTOP:blocked");
	assert_true(itest_log_of(t, sleeper, got, sizeof(got)) >= 0);
	assert_string_equal(got, "");
	/* The reader is still stuck, the server still serving: nothing was killed. */
	assert_int_equal(kill(server, 0), 0);
	assert_int_equal(count_outcome(t, "killed"), 0);
}

/*
 * A busy app no rung may touch (a ladder of one notify rung, and no consent): the
 * quiesce ends at its bound in a failure the kill log explains.
 */
static void test_bound_ends_in_logged_failure(void **state)
{
	struct itest *t = *state;
	uint64_t t0, took, bound;
	pid_t adv;
	int r;

	ITEST_REQUIRE(t);
	qj_test_policy_set_ladder(t->p, (const enum qj_action[]){ QJ_ACTION_SIGXCPU }, 1, GRACE);
	start(t);
	adv = itest_spawn(t, "qj-busy", "adv", NULL, 0);
	assert_true(adv > 0);
	bound = qj_policy_quiesce_bound_usec(t->p);
	t0 = now_usec(CLOCK_MONOTONIC);
	r = itest_quiesce(t, 1, 10 * bound);
	took = now_usec(CLOCK_MONOTONIC) - t0;
	print_message("quiesce: %d after %" PRIu64 " ms, bound %" PRIu64 " ms\n", r, took / 1000,
		      bound / 1000);
	assert_int_equal(r, -ETIMEDOUT);
	assert_true(took >= bound && took < bound + 2 * USEC_PER_SEC);
	assert_int_equal(itest_log_count_app(t, "adv", "quiesce-timeout"), 1);
	assert_int_equal(qj_engine_restore(t->e, "failed"), 0);
}

/* kill -9 of the daemon after a group stop: the next instance continues every task. */
static void test_group_stop_undone_by_restart(void **state)
{
	struct itest *t = *state;
	struct qj_engine_counts c;
	pid_t adv;

	ITEST_REQUIRE(t);
	start(t);
	adv = itest_spawn(t, "qj-hopper", "adv", NULL, 0);
	assert_true(adv > 0);
	assert_int_equal(itest_quiesce(t, 1, TIMEOUT), 1);
	assert_int_equal(qj_engine_counts(t->e, &c), 0);
	assert_true(c.stopped >= 1);
	t->e = qj_engine_free(t->e); /* kill -9: nothing undone */
	assert_int_equal(itest_start_engine(t), 0);
	assert_nothing_stopped(t, "adv");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_main_thread_exit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hop_process, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hop_thread, setup, teardown),
		cmocka_unit_test_setup_teardown(test_daemonizer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_duty_cycler, setup, teardown),
		cmocka_unit_test_setup_teardown(test_duty_cycler_loaded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_duty_cycler_share, setup, teardown),
		cmocka_unit_test_setup_teardown(test_short_spinners, setup, teardown),
		cmocka_unit_test_setup_teardown(test_make_loop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shell_pipeline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_chromium, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork_storm, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_taken_by_another_thread, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bound_ends_in_logged_failure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_group_stop_undone_by_restart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_notify_needs_consent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_death_after_resume_logged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_d_state_thread, setup, teardown_fuse),
		cmocka_unit_test_setup_teardown(test_exit_status_of_process, setup, teardown),
		cmocka_unit_test_setup_teardown(test_death_logged_from_its_event, setup, teardown),
	};

	if (getenv("QJ_TEST_FILTER")) /* e.g. QJ_TEST_FILTER='test_hop*' */
		cmocka_set_test_filter(getenv("QJ_TEST_FILTER"));
	else /* runs alone as integration/adversary-forkstorm (tests/integration/CMakeLists.txt) */
		cmocka_set_skip_filter("test_fork_storm");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
