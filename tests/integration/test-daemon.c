// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A real qosjaild on a temporary socket (dry-run backend: nothing is ever
 * suspended): holds, statistics, bad messages, slow readers, access control,
 * reload, suspend cycles and 1000 concurrent clients.
 */
#include <errno.h>
#include <grp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon-harness.h"
#include "qosjail.h"

/* Long idle delay: no cycle starts by itself unless a test wants one. */
static const char policy_quiet[] = "version: 1\n"
				   "suspend:\n"
				   "  backend: dry-run\n"
				   "  idle_delay: 1h\n"
				   "  dry_run_length: 200ms\n"
				   "access:\n"
				   "  hold: \"*\"\n"
				   "  place: { uids: [0] }\n"
				   "  reload: { uids: [0] }\n"
				   "  suspend: { uids: [0] }\n"
				   "  logs: { uids: [0] }\n"
				   "log:\n"
				   "  path: @DIR@/kill.log\n";

/* main() already refused to run without root: a missing harness is a failure here. */
static int setup(void **state)
{
	return harness_setup(state, policy_quiet) < 0 || !*state ? -1 : 0;
}

static size_t n_holds(struct harness *h)
{
	json_t *j = harness_status(h);
	size_t n = j ? (size_t)json_integer_value(json_object_get(j, "holds_total")) : (size_t)-1;

	json_decref(j);
	return n;
}

static void test_hold_release(void **state)
{
	struct harness *h = *state;
	struct qj_conn *c = NULL;

	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_hold(c, "net", "download", 0, 0), 0);
	assert_int_equal(qj_hold(c, "net", "download, still", 0, 0), 0); /* refresh */
	assert_int_equal(n_holds(h), 1);
	assert_true(harness_wait_state(h, "awake", 0));
	assert_int_equal(qj_release(c, "net"), 0);
	assert_int_equal(qj_release(c, "net"), -ENOENT);
	assert_non_null(strstr(qj_last_error(c), "holds no 'net'"));
	assert_int_equal(n_holds(h), 0);
	assert_true(harness_wait_state(h, "idle-wait", 0));
	assert_int_equal(qj_hold(c, "", "x", 0, 0), -EINVAL);
	qj_close(c);
}

/* The wire form of hold and release replies: only what differs from the defaults. */
static void test_hold_reply_fields(void **state)
{
	static const struct {
		const char *request, *reply;
	} steps[] = {
		{ "{\"op\":\"hello\",\"version\":1}", NULL },
		{ "{\"op\":\"hold\",\"name\":\"w\",\"reason\":\"r\"}", "{\"ok\":true}" },
		{ "{\"op\":\"hold\",\"name\":\"w\",\"reason\":\"r2\"}",
		  "{\"ok\":true,\"refreshed\":true}" },
		{ "{\"op\":\"hold\",\"name\":\"t\",\"reason\":\"r\",\"timeout_usec\":5000000}",
		  "{\"ok\":true,\"timeout_usec\":5000000}" },
		{ "{\"op\":\"release\",\"name\":\"w\"}", "{\"ok\":true}" },
		{ "{\"op\":\"release\",\"name\":\"t\"}", "{\"ok\":true}" },
	};
	struct harness *h = *state;
	int fd = raw_connect(h->socket);

	assert_true(fd >= 0);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		char *r = raw_call(fd, steps[i].request, strlen(steps[i].request));

		assert_non_null(r);
		if (steps[i].reply)
			assert_string_equal(r, steps[i].reply);
		free(r);
	}
	assert_int_equal(n_holds(h), 0);
	close(fd);
}

static void test_hold_timeout_expires(void **state)
{
	struct harness *h = *state;
	struct qj_conn *c = NULL;
	char *text = NULL;
	json_t *j, *s;

	assert_int_equal(qj_open(h->socket, &c), 0);
	/*
	 * Granted; not counted here, as a daemon starved for 100 ms (valgrind at load 2,000:
	 * h1 on 077a0fb) has expired it before the count is asked.  Its statistics below
	 * say it was held, for no less than its lease, and expired once.
	 */
	assert_int_equal(qj_hold(c, "short", "lease", 100 * 1000, 0), 0);
	/*
	 * The bound is for a daemon starved on a loaded machine under valgrind (3 s was
	 * missed at load 7,600), far past any scheduling delay; expiring is what is asserted.
	 */
	for (int i = 0; i < 12000 && n_holds(h) != 0; i++)
		msleep(10);
	assert_int_equal(n_holds(h), 0);
	assert_int_equal(qj_holds(c, &text), 0);
	j = json_loads(text, 0, NULL);
	s = json_array_get(json_object_get(j, "stats"), 0);
	assert_string_equal(json_string_value(json_object_get(s, "name")), "short");
	assert_int_equal(json_integer_value(json_object_get(s, "expire_count")), 1);
	/* Expired no earlier than its timeout. */
	assert_true(json_integer_value(json_object_get(s, "total_time_usec")) >= 100 * 1000);
	json_decref(j);
	free(text);
	assert_int_equal(qj_release(c, "short"), -ENOENT);
	qj_close(c);
}

static void test_hold_dies_with_connection(void **state)
{
	struct harness *h = *state;
	struct qj_conn *a = NULL, *b = NULL;

	assert_int_equal(qj_open(h->socket, &a), 0);
	assert_int_equal(qj_open(h->socket, &b), 0);
	assert_int_equal(qj_hold(a, "a1", "r", 0, 0), 0);
	assert_int_equal(qj_hold(a, "a2", "r", 0, 0), 0);
	assert_int_equal(qj_hold(b, "b1", "r", 0, 0), 0);
	assert_int_equal(n_holds(h), 3);
	qj_close(a);
	for (int i = 0; i < 100 && n_holds(h) != 1; i++)
		msleep(10);
	assert_int_equal(n_holds(h), 1);
	/* A killed holder process too. */
	pid_t pid = fork();

	if (pid == 0) {
		struct qj_conn *c = NULL;

		if (qj_open(h->socket, &c) < 0 || qj_hold(c, "child", "r", 0, 0) < 0)
			_exit(1);
		pause();
		_exit(0);
	}
	for (int i = 0; i < 200 && n_holds(h) != 2; i++)
		msleep(10);
	assert_int_equal(n_holds(h), 2);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	for (int i = 0; i < 100 && n_holds(h) != 1; i++)
		msleep(10);
	assert_int_equal(n_holds(h), 1);
	qj_close(b);
}

static void test_stats_real_time(void **state)
{
	struct harness *h = *state;
	struct qj_conn *c = NULL;
	char *text = NULL;
	json_t *j, *s;

	assert_int_equal(qj_open(h->socket, &c), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(qj_hold(c, "rt", "r", 0, 0), 0);
		msleep(30);
		assert_int_equal(qj_release(c, "rt"), 0);
	}
	assert_int_equal(qj_holds(c, &text), 0);
	j = json_loads(text, 0, NULL);
	s = json_array_get(json_object_get(j, "stats"), 0);
	assert_int_equal(json_integer_value(json_object_get(s, "active")), 0);
	assert_int_equal(json_integer_value(json_object_get(s, "active_count")), 3);
	assert_int_equal(json_integer_value(json_object_get(s, "event_count")), 3);
	assert_int_equal(json_integer_value(json_object_get(s, "expire_count")), 0);
	/* Sane, not absolute: at least the time slept, max at most total, all preventing. */
	assert_true(json_integer_value(json_object_get(s, "total_time_usec")) >= 90 * 1000);
	assert_true(json_integer_value(json_object_get(s, "max_time_usec")) >= 30 * 1000);
	assert_true(json_integer_value(json_object_get(s, "max_time_usec")) <=
		    json_integer_value(json_object_get(s, "total_time_usec")));
	assert_int_equal(json_integer_value(json_object_get(s, "prevent_suspend_time_usec")),
			 json_integer_value(json_object_get(s, "total_time_usec")));
	json_decref(j);
	free(text);
	qj_close(c);
}

struct bad {
	const char *text;
	const char *error;
};

static void expect_error(int fd, const char *text, size_t len, const char *error)
{
	char *reply = raw_call(fd, text, len);
	json_t *j;

	assert_non_null(reply);
	j = json_loads(reply, 0, NULL);
	assert_non_null(j);
	if (!json_is_false(json_object_get(j, "ok")) ||
	    strcmp(json_string_value(json_object_get(j, "error")), error) != 0)
		fail_msg("expected %s, got %s", error, reply);
	assert_non_null(json_string_value(json_object_get(j, "message")));
	json_decref(j);
	free(reply);
}

static void test_bad_messages_others_served(void **state)
{
	static const struct bad bad[] = {
		{ "{\"op\":\"hello\",\"version\":99}", "EPROTONOSUPPORT" },
		{ "{\"op\":\"hold\",\"name\":\"x\",\"reason\":\"r\"}", "EPROTO" }, /* no hello */
		{ "{\"op\":\"hello\",\"version\":1}", NULL },
		{ "this is not json", "EBADMSG" },
		/* jansson's error quotes the invalid UTF-8: still a reply (found by fuzz-proto). */
		{ "{\"op\\\xde\x8d\x8f\x9d"
		  "acid\":2a",
		  "EBADMSG" },
		{ "[\"op\",\"hold\"]", "EBADMSG" },
		{ "{\"op\":\"teleport\"}", "EOPNOTSUPP" },
		{ "{\"op\":\"hold\",\"name\":5,\"reason\":\"r\"}", "EINVAL" },
		{ "{\"op\":\"hold\",\"reason\":\"r\"}", "EINVAL" },
		{ "{\"op\":\"place\",\"app\":\"a\",\"pid\":-3}", "EINVAL" },
		{ "{\"op\":\"release\",\"name\":\"x\",\"extra\":1}", "EINVAL" },
	};
	struct harness *h = *state;
	struct qj_conn *other = NULL;
	size_t big_len = 70 * 1024;
	char *big = malloc(big_len);
	int fd = raw_connect(h->socket);

	assert_true(fd >= 0);
	assert_int_equal(qj_open(h->socket, &other), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (bad[i].error) {
			expect_error(fd, bad[i].text, strlen(bad[i].text), bad[i].error);
		} else {
			char *r = raw_call(fd, bad[i].text, strlen(bad[i].text));

			assert_non_null(strstr(r, "\"ok\":true"));
			free(r);
		}
		/* Another client is served between every bad message. */
		assert_int_equal(qj_hold(other, "other", "still served", 0, 0), 0);
	}
	memset(big, ' ', big_len);
	memcpy(big, "{\"op\":\"status\"}", 15);
	expect_error(fd, big, big_len, "EMSGSIZE");
	/* The misbehaving client itself is still served. */
	{
		static const char hold[] = "{\"op\":\"hold\",\"name\":\"raw\",\"reason\":\"r\"}";
		char *r = raw_call(fd, hold, strlen(hold));

		assert_non_null(r);
		assert_non_null(strstr(r, "\"ok\":true"));
		free(r);
	}
	assert_int_equal(n_holds(h), 2);
	assert_int_equal(qj_release(other, "other"), 0);
	free(big);
	close(fd);
	qj_close(other);
}

static void test_slow_reader_disconnected(void **state)
{
	static const char hello[] = "{\"op\":\"hello\",\"version\":1}";
	static const char req[] = "{\"op\":\"holds\"}";
	struct harness *h = *state;
	struct qj_conn *other = NULL;
	int fd = raw_connect(h->socket);
	int sent = 0;
	json_t *j;

	assert_true(fd >= 0);
	free(raw_call(fd, hello, strlen(hello)));
	assert_int_equal(qj_open(h->socket, &other), 0);
	assert_int_equal(qj_hold(other, "x", "r", 0, 0), 0);
	/* Never read the replies: the daemon must give up on us, not block. */
	for (int i = 0; i < 20000; i++) {
		if (send(fd, req, strlen(req), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
			if (errno == EAGAIN) {
				msleep(1);
				continue;
			}
			break; /* EPIPE/ECONNRESET: disconnected */
		}
		sent++;
	}
	assert_true(sent > 0);
	j = harness_status(h);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "clients")), 2); /* other + us */
	json_decref(j);
	assert_int_equal(qj_release(other, "x"), 0);
	close(fd);
	qj_close(other);
}

static int (*nobody_fn)(struct harness *h);

static int nobody_call(void *h)
{
	return nobody_fn(h);
}

/* Runs @fn as uid 65534 in a child; returns the child's exit status. */
static int as_nobody(struct harness *h, int (*fn)(struct harness *h))
{
	nobody_fn = fn;
	return harness_run_as(65534, nobody_call, h);
}

static int nobody_refused(struct harness *h)
{
	struct qj_conn *c = NULL;
	char *argv[] = { "true", NULL };
	char *text = NULL;
	pid_t pid;
	int fd;

	if (qj_open(h->socket, &c) < 0)
		return 1;
	if (qj_suspend(c) != -EPERM || !strstr(qj_last_error(c), "access.suspend"))
		return 2;
	if (qj_reload(c, NULL) != -EPERM || !strstr(qj_last_error(c), "access.reload"))
		return 3;
	if (qj_place(c, "app", getpid()) != -EPERM || !strstr(qj_last_error(c), "access.place"))
		return 4;
	if (qj_kill_log_open(c, &fd) != -EPERM || !strstr(qj_last_error(c), "access.logs"))
		return 5;
	if (qj_spawn(c, "app", argv, &pid, NULL) != -EPERM)
		return 6;
	if (qj_hold(c, "n", "r", 0, 0) != 0) /* hold: "*" */
		return 7;
	/* explain: another user's process only for log readers; one's own always. */
	if (qj_explain(c, 1, &text) != -EPERM || !strstr(qj_last_error(c), "access.logs"))
		return 8;
	if (qj_explain(c, getpid(), &text) != 0 || !strstr(text, "\"uid\":65534"))
		return 9;
	free(text);
	qj_close(c);
	return 0;
}

static int nobody_hold_refused(struct harness *h)
{
	struct qj_conn *c = NULL;

	if (qj_open(h->socket, &c) < 0)
		return 1;
	if (qj_hold(c, "n", "r", 0, 0) != -EPERM || !strstr(qj_last_error(c), "access.hold"))
		return 2;
	if (qj_status(c, &(char *){ NULL }) != 0) /* status is for everyone */
		return 3;
	qj_close(c);
	return 0;
}

static void test_access_refusals(void **state)
{
	struct harness *h = *state;
	struct qj_conn *root = NULL;
	char path[400];
	FILE *f;
	int fd;

	assert_int_equal(as_nobody(h, nobody_refused), 0);
	/* root is in every list */
	snprintf(path, sizeof(path), "%s/kill.log", h->dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(qj_open(h->socket, &root), 0);
	assert_int_equal(qj_kill_log_open(root, &fd), 0);
	assert_true(fd >= 0);
	close(fd);
	qj_close(root);

	/* Now restrict holds to root and reload. */
	assert_int_equal(harness_write_policy(h, h->policy,
					      "version: 1\n"
					      "suspend: { backend: dry-run, idle_delay: 1h }\n"
					      "access:\n"
					      "  hold: { uids: [0] }\n"),
			 0);
	assert_int_equal(qj_open(h->socket, &root), 0);
	assert_int_equal(qj_reload(root, NULL), 0);
	qj_close(root);
	assert_int_equal(as_nobody(h, nobody_hold_refused), 0);
}

static void test_reload_bad_policy_keeps_running(void **state)
{
	struct harness *h = *state;
	struct qj_conn *c = NULL;
	char bad[400];
	json_t *j;

	snprintf(bad, sizeof(bad), "%s/bad.yaml", h->dir);
	assert_int_equal(harness_write_policy(h, bad,
					      "version: 1\n"
					      "suspend:\n"
					      "  backend: warp-drive\n"
					      "  idle_delay: 10ms\n"),
			 0);
	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_reload(c, bad), -EINVAL);
	assert_non_null(strstr(qj_last_error(c), "bad.yaml:3:"));
	qj_close(c);
	/* Still the old policy: file name and its 1h idle delay (no cycle started). */
	msleep(100);
	j = harness_status(h);
	assert_string_equal(json_string_value(json_object_get(j, "policy")), h->policy);
	assert_string_equal(json_string_value(json_object_get(j, "state")), "idle-wait");
	assert_int_equal(json_integer_value(json_object_get(j, "cycle")), 0);
	json_decref(j);
	/* SIGHUP with a broken file keeps it as well. */
	assert_int_equal(harness_write_policy(h, h->policy, "version: 7\n"), 0);
	kill(h->pid, SIGHUP);
	msleep(100);
	j = harness_status(h);
	assert_string_equal(json_string_value(json_object_get(j, "backend")), "dry-run");
	json_decref(j);
}

static void test_dry_run_cycle_and_interrupt(void **state)
{
	struct harness *h = *state;
	struct qj_conn *c = NULL, *holder = NULL;
	json_t *j;

	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_suspend(c), 0);
	assert_int_equal(qj_suspend(c), -EALREADY);
	/* Dry run "suspends" for 200ms then resumes. */
	assert_true(harness_wait_int(h, "suspends", 1, 5000) >= 1);
	assert_true(harness_wait_state(h, "idle-wait", 5000));
	j = harness_status(h);
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(j, "last"), "result")),
		"suspended");
	assert_int_equal(json_integer_value(json_object_get(j, "dry_runs")), 1);
	json_decref(j);

	/* A hold taken during the simulated suspend interrupts it. */
	assert_int_equal(qj_suspend(c), 0);
	assert_true(harness_wait_state(h, "suspending", 5000));
	assert_int_equal(qj_open(h->socket, &holder), 0);
	assert_int_equal(qj_hold(holder, "urgent", "incoming call", 0, 0), 0);
	assert_true(harness_wait_state(h, "awake", 5000));
	j = harness_status(h);
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(j, "last"), "result")),
		"interrupted");
	assert_int_equal(json_integer_value(json_object_get(j, "dry_runs")), 1);
	assert_int_equal(json_integer_value(json_object_get(j, "aborts")), 1);
	assert_int_equal(json_integer_value(json_object_get(j, "cycle")), 2);
	json_decref(j);
	assert_int_equal(qj_suspend(c), -EBUSY);
	assert_non_null(strstr(qj_last_error(c), "1 hold(s)"));
	qj_close(holder);
	qj_close(c);
}

static void test_thousand_clients(void **state)
{
	enum { N = 1000 };
	struct harness *h = *state;
	struct rlimit rl = { .rlim_cur = 4096, .rlim_max = 4096 };
	struct qj_conn **c = calloc(N, sizeof(*c));
	char name[32];

	assert_non_null(c);
	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < 4096) {
		rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
		assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	}
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "h%d", i);
		assert_int_equal(qj_open(h->socket, &c[i]), 0);
		assert_int_equal(qj_hold(c[i], name, "load", 0, 0), 0);
	}
	assert_int_equal(n_holds(h), N);
	{
		json_t *j = harness_status(h);

		/* The listing is cut to fit one message; the total is exact. */
		assert_true(json_is_true(json_object_get(j, "truncated")));
		assert_true(json_array_size(json_object_get(j, "holds")) > 0);
		json_decref(j);
	}
	for (int i = 0; i < N; i += 2) {
		snprintf(name, sizeof(name), "h%d", i);
		assert_int_equal(qj_release(c[i], name), 0);
	}
	assert_int_equal(n_holds(h), N / 2);
	for (int i = 0; i < N; i++)
		qj_close(c[i]);
	for (int i = 0; i < 200 && n_holds(h) != 0; i++)
		msleep(10);
	assert_int_equal(n_holds(h), 0);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hold_release, setup, harness_teardown),
		cmocka_unit_test_setup_teardown(test_hold_reply_fields, setup, harness_teardown),
		cmocka_unit_test_setup_teardown(test_hold_timeout_expires, setup, harness_teardown),
		cmocka_unit_test_setup_teardown(test_hold_dies_with_connection, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_stats_real_time, setup, harness_teardown),
		cmocka_unit_test_setup_teardown(test_bad_messages_others_served, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_slow_reader_disconnected, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_access_refusals, setup, harness_teardown),
		cmocka_unit_test_setup_teardown(test_reload_bad_policy_keeps_running, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_dry_run_cycle_and_interrupt, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_thousand_clients, setup, harness_teardown),
	};

	if (geteuid() != 0) {
		if (getenv("CI") && strcmp(getenv("CI"), "true") == 0) {
			fprintf(stderr, "integration/daemon needs root (CI=true: failing)\n");
			return 1;
		}
		fprintf(stderr, "integration/daemon needs root, skipped\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
