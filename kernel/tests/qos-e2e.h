/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the files of the qos-e2e guest program (qos-e2e.c and the
 * suspend-to-idle checks of qos-e2e-s2idle.c).
 */
#ifndef QOS_E2E_H
#define QOS_E2E_H

#define STATE		"/sys/power/state"
#define INJECT		"/sys/kernel/debug/qos_eventually_test/inject"
#define MEM_SLEEP	"/sys/power/mem_sleep"
#define PM_TEST		"/sys/power/pm_test"
#define SUCCESS		"/sys/power/suspend_stats/success"
#define FAIL		"/sys/power/suspend_stats/fail"

struct wsrow {
	char name[64];
	long active_count, event_count, wakeup_count, expire_count,
		active_since, total, max, last_change, prevent;
};

/* One "QJ-E2E: PASS|FAIL" line; a FAIL counts in the exit status. */
void report(int ok, const char *check, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Write "qos" to /sys/power/state; return 0 or -errno. */
int write_qos(void);
int write_str(const char *path, const char *s);
int read_str(const char *path, char *buf, size_t size);
/* The number in @path, or -1. */
long read_long(const char *path);
/* Find @name in /sys/kernel/debug/wakeup_sources: 0 or -ENOENT. */
int ws_row(const char *name, struct wsrow *r);

void check_w(void);
void check_x(void);

#endif /* QOS_E2E_H */
