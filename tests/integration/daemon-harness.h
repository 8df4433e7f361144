/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Starts a real qosjaild on a temporary socket with a temporary policy, for
 * the integration tests.  "@DIR@" in the policy text becomes the temporary
 * directory, "@CG@"/"@CPU@" the test's jail subtree
 * (/sys/fs/cgroup/unified/qosjail-test-PID and its v1 cpu twin, from
 * tests/support/itest.c, removed by harness_cleanup()).  A policy without a
 * jail: or log: section gets one pointing there.  Only the daemon this
 * harness started is ever signalled.
 */
#ifndef QJ_DAEMON_HARNESS_H
#define QJ_DAEMON_HARNESS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct itest;

struct harness {
	struct itest *it; /* the jail subtree */
	char dir[256];
	char socket[320];
	char policy[320];
	char log[320];
	pid_t pid;
};

/* Daemon started with -d (debug log into h->log); benchmarks turn it off. Default true. */
extern bool harness_debug;
/* The next daemon started gets ENOSYS from pidfd_open() (seccomp), as on old kernels. */
extern bool harness_no_pidfd;

/*
 * When set, the next daemon started gets it as $NOTIFY_SOCKET, and harness_start()
 * returns without waiting for the socket: the test waits for READY=1 itself.
 */
extern const char *harness_notify_socket;
/* When set, the next daemon started gets --metrics-file with it. */
extern const char *harness_metrics_file;

/* Creates the directory and policy, starts the daemon, waits until it answers. */
int harness_start(struct harness *h, const char *policy_text);
/* SIGKILLs the daemon (no cleanup of its own) and starts a new one on the same state. */
int harness_kill9_restart(struct harness *h);
/* Rewrites the policy file (for reload tests). */
int harness_write_policy(struct harness *h, const char *file, const char *policy_text);
/* harness_stop(), then a new daemon on the same state; 0 or negative errno. */
int harness_restart(struct harness *h);
/* SIGTERM, wait; returns the daemon's exit status (or -1). */
int harness_stop(struct harness *h);
/* Starts a daemon again on the same state after harness_stop(); 0 or negative errno. */
int harness_respawn(struct harness *h);
/*
 * For main(): -1 when running as root; otherwise says why @test cannot run and
 * returns its exit status: 77 (skipped), or 1 under CI=true.
 */
int harness_need_root(const char *test);
/* Removes the temporary directory. */
void harness_cleanup(struct harness *h);

/* The daemon's status object (caller json_decref()s), NULL on failure. */
json_t *harness_status(struct harness *h);
/* Polls status until json_integer(@key) >= @min or @timeout_ms passes; returns the value. */
long long harness_wait_int(struct harness *h, const char *key, long long min, int timeout_ms);
/* Polls status until state == @state; true when reached. */
bool harness_wait_state(struct harness *h, const char *state, int timeout_ms);
/* Prints the daemon's log to stderr (on failure). */
void harness_dump_log(struct harness *h);

/* Raw SOCK_SEQPACKET client speaking JSON (no hello unless sent). */
int raw_connect(const char *path);
/* Sends @text, receives one reply into a malloc()ed string. */
char *raw_call(int fd, const char *text, size_t len);

void msleep(unsigned ms);

/* Waits up to 10 s for @text to appear in the daemon's log (h->log). */
bool harness_log_has(struct harness *h, const char *text);

/*
 * Runs @fn(@arg) in a forked child with all its uids and gids set to @uid (no
 * supplementary groups); returns the child's exit status (fn's return value), 99 when
 * the switch failed, 100 when it died.
 */
int harness_run_as(uid_t uid, int (*fn)(void *arg), void *arg);

/* Resident set of @pid in KiB (VmRSS), -1 when unreadable. */
long harness_rss_kib(pid_t pid);

/*
 * cmocka setup and teardown: a harness started on @policy_text in *state.
 * Without root or cgroup2, *state is NULL (tests skip with a message) unless
 * CI=true, where setup fails.
 */
int harness_setup(void **state, const char *policy_text);
int harness_teardown(void **state);

/* Kills and reaps @pid in the next harness_teardown(), even when the test failed. */
void harness_track(pid_t pid);

/* In a test using harness_setup(): skip when it found no root or cgroup2. */
#define REQUIRE_HARNESS(h)                                              \
	do {                                                            \
		if (!(h)) {                                             \
			print_message("skipped: no root or cgroup2\n"); \
			skip();                                         \
		}                                                       \
	} while (0)

#endif
