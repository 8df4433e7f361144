/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Integration test harness: a dedicated jail subtree per test process
 * (/sys/fs/cgroup/unified/qosjail-test-PID and its v1 cpu twin), a temporary
 * kill log and state directory, test apps spawned straight into an app group,
 * and a teardown that kills and removes all of it even when a test failed.
 */
#ifndef QJ_ITEST_H
#define QJ_ITEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine.h"
#include "killlog.h"
#include "policy.h"

#define ITEST_MAX_PROCS 64

struct itest {
	char cg_path[256];
	char cpu_path[256];
	char tmpdir[64];
	char log_path[128];
	char state_dir[128];
	struct qj_policy *p;
	struct qj_killlog *log;
	struct qj_engine *e;
	pid_t procs[ITEST_MAX_PROCS];
	size_t n_procs;
};

/* Root and cgroup2 present?  Otherwise the test skips, or fails under CI=true. */
bool itest_available(const char **ret_why);
#define ITEST_REQUIRE(t)                                                                     \
	do {                                                                                 \
		const char *why_;                                                            \
		if (!itest_available(&why_)) {                                               \
			if (itest_ci())                                                      \
				fail_msg("integration test unavailable under CI: %s", why_); \
			print_message("skipped: %s\n", why_);                                \
			skip();                                                              \
		}                                                                            \
		assert_non_null(t);                                                          \
	} while (0)
bool itest_ci(void);

/* Policy with the test subtree's paths, sample window 300 ms, default ladder with @grace. */
struct itest *itest_new(uint64_t grace_usec);
/* Opens the kill log and the engine (call after adjusting t->p). */
int itest_start_engine(struct itest *t);
void itest_free(struct itest *t);

/*
 * Starts tests/apps/@bin; with @app it runs in that app group from its first
 * instruction (placed before exec).  Waits for the ready line (copied to @line).
 */
pid_t itest_spawn(struct itest *t, const char *bin, const char *app, char *line, size_t size);
/* Directory the test apps are executed from (private copies). */
const char *itest_bin_dir(struct itest *t, char *buf, size_t size);
/* State letter from /proc/PID/stat, 0 when gone. */
char itest_state(pid_t pid);
/*
 * Stopped, or a SIGSTOP pending (a task starved at the jail's idle class acts on
 * it when it next runs; it runs nothing of its own before).
 */
bool itest_stopped_or_stopping(pid_t pid);
/* Runs begin and steps until done; returns the last step result or -ETIMEDOUT. */
int itest_quiesce(struct itest *t, uint64_t cycle, uint64_t timeout_usec);
int itest_steps(struct itest *t, uint64_t timeout_usec);

/* Feeds the engine its process events (as the daemon's loop does) for @usec. */
void itest_pump_events(struct itest *t, uint64_t usec);
/* Actions/outcomes of @pid's kill log records (in order) as "SIGSTOP:blocked,...". */
int itest_log_of(struct itest *t, pid_t pid, char *buf, size_t size);
/* Number of records with action @action (NULL: actions: not summary, exit, quiesce-timeout). */
int itest_log_count(struct itest *t, const char *action);
/* Records of app @app with action @action (NULL: any action but summaries). */
int itest_log_count_app(struct itest *t, const char *app, const char *action);
/* Records of @pid whose reason is @reason. */
int itest_log_count_reason(struct itest *t, pid_t pid, const char *reason);
/*
 * Writes the page headless Chromium spins on (JavaScript in the page and in a worker) to
 * @path, so the test and bench-evasion load the same page: 0, or a negative errno.
 */
int itest_write_spin_page(const char *path);
/* usage_usec of app @app's cgroup2 group (cpu.stat): 0, or a negative errno. */
int itest_usage_usec(struct itest *t, const char *app, uint64_t *ret);
/* Reads an integer knob file. */
long long itest_read_ll(const char *dir, const char *file);

#endif
