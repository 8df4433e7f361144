// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * qosjaild under a service manager (Type=notify, issue 15): a real daemon started with
 * $NOTIFY_SOCKET naming this test's datagram socket.  READY=1 comes when a client can
 * already connect, STATUS= follows the cycle through a hold and a dry-run suspend,
 * STOPPING=1 comes on SIGTERM, in that order.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon-harness.h"
#include "qosjail.h"

/* Generous: the machine is shared and loaded; nothing here depends on how fast. */
#define MESSAGE_TIMEOUT_MS 60000

static const char policy_notify[] = "version: 1\n"
				    "suspend: { backend: dry-run, idle_delay: 1h, "
				    "dry_run_length: 300ms }\n";

struct notify_test {
	struct harness h;
	char dir[32];
	char path[100];
	int fd;
};

/* Set in the daemon's environment as systemd's WatchdogSec= does (microseconds); NULL: none. */
static const char *watchdog_usec;

static int setup(void **state)
{
	struct notify_test *t = calloc(1, sizeof(*t));
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int r;

	if (!t)
		return -1;
	t->fd = -1;
	*state = NULL;
	if (geteuid() != 0) {
		free(t);
		return getenv("CI") ? -1 : 0;
	}
	snprintf(t->dir, sizeof(t->dir), "/tmp/qjnotify-XXXXXX");
	if (!mkdtemp(t->dir))
		return -1;
	snprintf(t->path, sizeof(t->path), "%s/notify", t->dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", t->path);
	t->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (t->fd < 0 || bind(t->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -1;
	harness_notify_socket = t->path;
	if (watchdog_usec)
		(void)setenv("WATCHDOG_USEC", watchdog_usec, 1);
	r = harness_start(&t->h, policy_notify);
	(void)unsetenv("WATCHDOG_USEC");
	harness_notify_socket = NULL;
	if (r < 0)
		return -1;
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct notify_test *t = *state;

	if (!t)
		return 0;
	harness_cleanup(&t->h);
	if (t->fd >= 0)
		close(t->fd);
	unlink(t->path);
	rmdir(t->dir);
	free(t);
	return 0;
}

/* The next datagram as a string, or fails the test when none comes in time. */
static void next_message(struct notify_test *t, char *buf, size_t size)
{
	struct pollfd p = { .fd = t->fd, .events = POLLIN };
	ssize_t n;

	if (poll(&p, 1, MESSAGE_TIMEOUT_MS) != 1) {
		harness_dump_log(&t->h);
		fail_msg("no notification within %d ms", MESSAGE_TIMEOUT_MS);
	}
	n = recv(t->fd, buf, size - 1, 0);
	assert_true(n > 0);
	buf[n] = '\0';
	print_message("notify: %s\n", buf);
}

/* Reads messages until one is exactly @want; any other must not be @forbidden. */
static void expect_message(struct notify_test *t, const char *want)
{
	char buf[512];

	for (;;) {
		next_message(t, buf, sizeof(buf));
		assert_null(strstr(buf, "READY=1"));
		assert_null(strstr(buf, "STOPPING=1"));
		/* Without WATCHDOG_USEC no ping: an idle daemon wakes for nothing. */
		if (!watchdog_usec)
			assert_null(strstr(buf, "WATCHDOG=1"));
		if (strcmp(buf, want) == 0)
			return;
	}
}

static void test_ready_status_stopping(void **state)
{
	struct notify_test *t = *state;
	struct qj_conn *c = NULL;
	char buf[512];
	int fd;

	REQUIRE_HARNESS(t);
	/*
	 * READY=1 first.  The daemon is stopped the moment it arrives, so a socket that only
	 * listened after READY=1 cannot be connected to here: the kernel queues a connect
	 * on a listening socket whose owner is stopped.
	 */
	next_message(t, buf, sizeof(buf));
	assert_int_equal(kill(t->h.pid, SIGSTOP), 0);
	fd = raw_connect(t->h.socket);
	assert_int_equal(kill(t->h.pid, SIGCONT), 0);
	assert_true(fd >= 0);
	close(fd);
	assert_string_equal(buf, "READY=1\nSTATUS=idle-wait, 0 holds");

	/* A hold and its release. */
	assert_int_equal(qj_open(t->h.socket, &c), 0);
	assert_int_equal(qj_hold(c, "notify-test", "testing STATUS=", 0, 0), 0);
	expect_message(t, "STATUS=awake, 1 hold");
	assert_int_equal(qj_release(c, "notify-test"), 0);
	expect_message(t, "STATUS=idle-wait, 0 holds");

	/* A dry-run cycle, each state in order, then its result. */
	assert_int_equal(qj_suspend(c), 0);
	expect_message(t, "STATUS=quiescing, 0 holds");
	expect_message(t, "STATUS=suspending, 0 holds");
	expect_message(t, "STATUS=idle-wait, 0 holds; cycle 1 resumed");
	qj_close(c);

	/* SIGTERM: STOPPING=1 comes next, and the daemon exits cleanly. */
	assert_int_equal(kill(t->h.pid, SIGTERM), 0);
	next_message(t, buf, sizeof(buf));
	assert_string_equal(buf, "STOPPING=1\nSTATUS=restoring the jail and exiting");
	assert_int_equal(harness_stop(&t->h), 0);
}

static int setup_watchdog(void **state)
{
	int r;

	watchdog_usec = "300000";
	r = setup(state);
	return r;
}

static int teardown_watchdog(void **state)
{
	watchdog_usec = NULL;
	return teardown(state);
}

/*
 * WatchdogSec= (issue 25 finding 1): with WATCHDOG_USEC the loop pings WATCHDOG=1 while
 * it runs, so systemd restarts a daemon whose loop stalls (the restart undoes the jail).
 */
static void test_watchdog_pings(void **state)
{
	struct notify_test *t = *state;
	char buf[512];
	int pings = 0;

	REQUIRE_HARNESS(t);
	next_message(t, buf, sizeof(buf));
	assert_non_null(strstr(buf, "READY=1"));
	while (pings < 3) {
		next_message(t, buf, sizeof(buf));
		pings += strcmp(buf, "WATCHDOG=1") == 0;
	}
	assert_int_equal(kill(t->h.pid, SIGTERM), 0);
	assert_int_equal(harness_stop(&t->h), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ready_status_stopping, setup, teardown),
		cmocka_unit_test_setup_teardown(test_watchdog_pings, setup_watchdog,
						teardown_watchdog),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
