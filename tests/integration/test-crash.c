// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Crash campaign (issue 11): kill -9 of a real qosjaild at 20 seeded random
 * points of a suspend cycle (dry-run backend), restart, and check that the new
 * instance left nothing behind: no jailed task stopped, no app group frozen,
 * cpu.idle and every thread's timer slack as they were before the cycle, and
 * a kill log of whole, unduplicated lines.
 *
 * The base seed is printed; QJ_CRASH_SEED=N repeats a run, QJ_CRASH_CASES=N
 * changes the number of cases.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon-harness.h"
#include "itest.h"
#include "killlog.h"
#include "proc.h"
#include "qosjail.h"
#include "util.h"

/*
 * Two apps: "busy" only ever stopped, "frz" frozen (the cgroup freezer).  A
 * cycle: 200 ms sample window, the rungs, a 300 ms dry-run "suspend", resume
 * and restore: about 0.5-0.7 s here, so kill points span 0-0.65 s (some land
 * after the cycle, in idle-wait, as a control).
 */
static const char policy_crash[] = "version: 1\n"
				   "suspend:\n"
				   "  backend: dry-run\n"
				   "  idle_delay: 1h\n"
				   "  dry_run_length: 300ms\n"
				   "jail:\n"
				   "  cgroup: @CG@\n"
				   "  cpu_cgroup: @CPU@\n"
				   "  cpu_idle: true\n"
				   "  timer_slack: 20ms\n"
				   "  busy_threshold: 20%\n"
				   "  sample_window: 200ms\n"
				   "escalation:\n"
				   "  max_strikes: 0\n"
				   "  ladder:\n"
				   "    - { action: SIGSTOP, grace: 1h }\n"
				   "    - { action: freeze, grace: 1h }\n"
				   "apps:\n"
				   "  - name: busy\n"
				   "    match: { exe: \"/nonexistent/busy\" }\n"
				   "    max_rung: stop\n"
				   "  - name: frz\n"
				   "    match: { exe: \"/nonexistent/frz\" }\n"
				   "    start_rung: freeze\n"
				   "access:\n"
				   "  hold: \"*\"\n"
				   "  suspend: { uids: [0] }\n";

#define KILL_SPAN_MS 650
#define N_TASKS 3

struct thread_slack {
	pid_t tid;
	uint64_t ns;
};

struct seen_line {
	char *line;
	char key[200];
	unsigned case_no;
};

struct campaign {
	struct harness *h;
	pid_t tasks[N_TASKS];
	const char *task_app[N_TASKS];
	struct thread_slack slack[64];
	size_t n_slack;
	long long cpu_idle;
	char log[400];
	struct seen_line *seen; /* every kill-log line so far */
	size_t n_seen;
	long long max_cycle;
};

static int setup(void **state)
{
	struct campaign *c = calloc(1, sizeof(*c));

	if (!c)
		return -1;
	*state = c;
	return harness_setup((void **)&c->h, policy_crash) < 0 || !c->h ? -1 : 0;
}

static int teardown(void **state)
{
	struct campaign *c = *state;
	int r;

	for (size_t i = 0; i < N_TASKS; i++)
		if (c->tasks[i] > 0) {
			(void)kill(c->tasks[i], SIGKILL);
			(void)waitpid(c->tasks[i], NULL, 0);
		}
	r = harness_teardown((void **)&c->h);
	for (size_t i = 0; i < c->n_seen; i++)
		free(c->seen[i].line);
	free(c->seen);
	free(c);
	return r;
}

static void spawn(struct campaign *c, struct qj_conn *conn, size_t i, const char *bin,
		  const char *app)
{
	char exe[512];
	char *argv[] = { exe, NULL };

	snprintf(exe, sizeof(exe), "%s/tests/apps/%s", getenv("QJ_BUILD_DIR"), bin);
	assert_int_equal(qj_spawn(conn, app, argv, &c->tasks[i], NULL), 0);
	c->task_app[i] = app;
}

/* Every thread's timer slack, as the tasks had it before any cycle. */
static void record_slack(struct campaign *c)
{
	c->n_slack = 0;
	for (size_t i = 0; i < N_TASKS; i++) {
		_cleanup_free_ pid_t *tids = NULL;
		size_t n = 0;

		assert_int_equal(qj_proc_tids(c->tasks[i], &tids, &n), 0);
		for (size_t j = 0; j < n && c->n_slack < ARRAY_SIZE(c->slack); j++) {
			struct thread_slack *s = &c->slack[c->n_slack++];

			s->tid = tids[j];
			assert_int_equal(qj_proc_timerslack_get(tids[j], &s->ns), 0);
		}
	}
}

static void why_add(char *why, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void why_add(char *why, size_t size, const char *fmt, ...)
{
	size_t o = strlen(why);
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(why + o, size - o, fmt, ap);
	va_end(ap);
}

static const char *state_of(struct harness *h, char *buf, size_t size)
{
	json_t *j = harness_status(h);

	snprintf(buf, size, "%s", j ? json_string_value(json_object_get(j, "state")) : "?");
	json_decref(j);
	return buf;
}

/* What is left behind after a restart, into @must: each fails the campaign. */
static void leftovers(struct campaign *c, char *must, size_t size)
{
	static const char *const apps[] = { "busy", "frz" };

	must[0] = '\0';
	for (size_t i = 0; i < N_TASKS; i++) {
		char st = itest_state(c->tasks[i]);

		if (st == 'T' || st == 't')
			why_add(must, size, " task %d (%s) stopped;", c->tasks[i], c->task_app[i]);
	}
	for (size_t i = 0; i < ARRAY_SIZE(apps); i++) {
		char dir[400];
		long long v;

		snprintf(dir, sizeof(dir), "%s/%s", c->h->it->cg_path, apps[i]);
		v = itest_read_ll(dir, "cgroup.freeze");
		if (v != 0)
			why_add(must, size, " app %s frozen (cgroup.freeze %lld);", apps[i], v);
	}
	if (itest_read_ll(c->h->it->cpu_path, "cpu.idle") != c->cpu_idle)
		why_add(must, size, " cpu.idle %lld, was %lld;",
			itest_read_ll(c->h->it->cpu_path, "cpu.idle"), c->cpu_idle);
	for (size_t i = 0; i < c->n_slack; i++) {
		uint64_t ns = 0;

		if (qj_proc_timerslack_get(c->slack[i].tid, &ns) == 0 && ns != c->slack[i].ns)
			why_add(must, size, " tid %d timer slack %" PRIu64 " ns, was %" PRIu64 ";",
				c->slack[i].tid, ns, c->slack[i].ns);
	}
}

/* Puts back the timer slack a case left, so the next case starts clean. */
static void reset_slack(struct campaign *c)
{
	for (size_t i = 0; i < c->n_slack; i++)
		(void)qj_proc_timerslack_set(c->slack[i].tid, c->slack[i].ns);
}

/*
 * The kill log after case @case_no: every line whole and a JSON object, no line
 * twice, no action (cycle, pid, action, outcome, reason) logged twice in one
 * case, no cycle id that an earlier case used (a restarted daemon numbers on
 * from the log).
 */
static void check_log(struct campaign *c, unsigned case_no, char *must, size_t size)
{
	_cleanup_free_ char *text = NULL;
	char *save = NULL;
	FILE *f = fopen(c->log, "re");
	long long case_min_cycle = -1;
	size_t first_new;
	long len;

	if (!f)
		return; /* nothing logged yet */
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)len + 1);
	assert_non_null(text);
	assert_int_equal(fread(text, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	if (len > 0 && text[len - 1] != '\n')
		why_add(must, size, " torn last line;");
	first_new = c->n_seen;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		json_t *rec = json_loads(line, 0, NULL);
		struct seen_line *s;
		bool old = false;

		if (!json_is_object(rec)) {
			why_add(must, size, " bad line '%.80s';", line);
			json_decref(rec);
			continue;
		}
		for (size_t i = 0; i < first_new && !old; i++)
			old = strcmp(c->seen[i].line, line) == 0;
		if (old) {
			json_decref(rec);
			continue;
		}
		c->seen = realloc(c->seen, (c->n_seen + 1) * sizeof(*c->seen));
		assert_non_null(c->seen);
		s = &c->seen[c->n_seen];
		s->line = strdup(line);
		assert_non_null(s->line);
		s->case_no = case_no;
		snprintf(s->key, sizeof(s->key), "cycle %lld pid %lld %s %s (%s)",
			 (long long)json_integer_value(json_object_get(rec, "cycle")),
			 (long long)json_integer_value(json_object_get(rec, "pid")),
			 json_string_value(json_object_get(rec, "action")) ?: "-",
			 json_string_value(json_object_get(rec, "outcome")) ?: "-",
			 json_string_value(json_object_get(rec, "reason")) ?: "-");
		if (case_min_cycle < 0 ||
		    json_integer_value(json_object_get(rec, "cycle")) < case_min_cycle)
			case_min_cycle = json_integer_value(json_object_get(rec, "cycle"));
		json_decref(rec);
		for (size_t i = first_new; i < c->n_seen; i++)
			if (strcmp(c->seen[i].line, s->line) == 0 ||
			    strcmp(c->seen[i].key, s->key) == 0)
				why_add(must, size, " duplicated record %s;", s->key);
		c->n_seen++;
	}
	/* An exact line of an earlier case again: written twice. */
	for (size_t i = first_new; i < c->n_seen; i++)
		for (size_t j = 0; j < first_new; j++)
			if (strcmp(c->seen[i].line, c->seen[j].line) == 0)
				why_add(must, size, " line of case %u written again;",
					c->seen[j].case_no);
	if (case_min_cycle >= 0 && case_min_cycle <= c->max_cycle)
		why_add(must, size, " cycle id %lld reused (an earlier case reached %lld);",
			case_min_cycle, c->max_cycle);
	for (size_t i = first_new; i < c->n_seen; i++) {
		long long cy = 0;

		if (sscanf(c->seen[i].key, "cycle %lld", &cy) == 1 && cy > c->max_cycle)
			c->max_cycle = cy;
	}
}

static unsigned env_uint(const char *name, unsigned dflt)
{
	const char *v = getenv(name);

	return v && *v ? (unsigned)strtoul(v, NULL, 0) : dflt;
}

static void test_crash_campaign(void **state)
{
	struct campaign *c = *state;
	unsigned base = env_uint("QJ_CRASH_SEED", (unsigned)time(NULL) ^ (unsigned)getpid());
	unsigned cases = env_uint("QJ_CRASH_CASES", 20);
	struct qj_conn *conn = NULL;
	unsigned failed = 0;
	char must[2048], st[32];

	fprintf(stderr, "crash campaign: base seed %u (QJ_CRASH_SEED=%u repeats it), %u cases\n",
		base, base, cases);
	snprintf(c->log, sizeof(c->log), "%s/kill.log", c->h->dir);
	assert_int_equal(qj_open(c->h->socket, &conn), 0);
	spawn(c, conn, 0, "qj-busy", "busy");
	spawn(c, conn, 1, "qj-spinner", "busy");
	spawn(c, conn, 2, "qj-busy", "frz");
	qj_close(conn);
	msleep(50); /* the spinner's threads are up */
	record_slack(c);
	c->cpu_idle = itest_read_ll(c->h->it->cpu_path, "cpu.idle");
	assert_int_equal(c->cpu_idle, 0);

	for (unsigned i = 0; i < cases; i++) {
		unsigned seed = base + i, at_ms = (unsigned)rand_r(&seed) % KILL_SPAN_MS;

		assert_int_equal(qj_open(c->h->socket, &conn), 0);
		assert_int_equal(qj_suspend(conn), 0);
		msleep(at_ms);
		qj_close(conn);
		state_of(c->h, st, sizeof(st));
		assert_int_equal(harness_kill9_restart(c->h), 0);
		/* The new instance undoes leftovers before it answers; allow a moment anyway. */
		for (int w = 0; w < 25; w++) {
			leftovers(c, must, sizeof(must));
			if (!must[0])
				break;
			msleep(20);
		}
		check_log(c, i, must, sizeof(must));
		fprintf(stderr, "crash case %2u: seed %u, kill -9 at %4u ms (%s): %s%s\n", i,
			base + i, at_ms, st, must[0] ? "LEFT BEHIND:" : "clean", must);
		failed += must[0] != '\0';
		reset_slack(c);
	}
	fprintf(stderr, "crash campaign: %u of %u cases clean, %u left something behind\n",
		cases - failed, cases, failed);
	if (failed) {
		harness_dump_log(c->h);
		fail_msg("%u of %u crash cases left something behind (base seed %u)", failed, cases,
			 base);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_crash_campaign, setup, teardown),
	};
	int r = harness_need_root("integration/crash");

	if (r >= 0)
		return r;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
