// SPDX-License-Identifier: GPL-2.0
/*
 * qos-e2e checks (w) and (x): suspend-to-idle entered for real
 * (mem_sleep = s2idle, pm_test = none), where the PM core has no syscore
 * phase and checks for wakeup events last in s2idle_loop().
 *
 * The guest has no wakeup device that works in suspend-to-idle, so every
 * attempt arms the test hooks' s2idle_wake: pm_system_wakeup() once the
 * processors were told to enter suspend-to-idle, never before.  Its count
 * of delivered wakeups tells a suspend-to-idle that was entered and ended
 * from one that backed out without idling; an attempt that idles when it
 * should not is woken too, so no outcome hangs the guest.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "qos-e2e.h"

#define S2IDLE_WAKE	"/sys/kernel/debug/qos_eventually_test/s2idle_wake"

struct s2idle_try {
	int r;			/* 0 or -errno of the write */
	long success, fail;	/* suspend_stats deltas */
	long woken;		/* suspend-to-idle entered and ended */
};

/* Wakeups s2idle_wake delivered since boot, or -1. */
static long s2idle_woken(void)
{
	char buf[64];
	int armed, woken;

	if (read_str(S2IDLE_WAKE, buf, sizeof(buf)) ||
	    sscanf(buf, "armed %d woken %d", &armed, &woken) != 2)
		return -1;
	return woken;
}

/* Write @what ("qos" or "freeze") to /sys/power/state, s2idle_wake armed. */
static void s2idle_attempt(const char *what, struct s2idle_try *t)
{
	long s0 = read_long(SUCCESS), f0 = read_long(FAIL), w0 = s2idle_woken();

	if (write_str(S2IDLE_WAKE, "1")) {
		t->r = -ENOSYS;
		t->success = t->fail = t->woken = -1;
		return;
	}
	t->r = strcmp(what, "qos") ? write_str(STATE, what) : write_qos();
	write_str(S2IDLE_WAKE, "0");
	t->success = read_long(SUCCESS) - s0;
	t->fail = read_long(FAIL) - f0;
	t->woken = s2idle_woken() - w0;
}

/* Real suspend-to-idle; 0, or -errno with the settings put back. */
static int s2idle_select(void)
{
	int r = write_str(MEM_SLEEP, "s2idle");

	if (!r)
		r = write_str(PM_TEST, "none");
	if (r) {
		write_str(MEM_SLEEP, "deep");
		write_str(PM_TEST, "core");
	}
	return r;
}

static void s2idle_restore(void)
{
	write_str(MEM_SLEEP, "deep");
	write_str(PM_TEST, "core");
}

static const char *s2idle_says(const struct s2idle_try *t)
{
	static char buf[4][128];
	static int i;
	char *b = buf[i++ % 4];

	snprintf(b, sizeof(buf[0]), "%s (suspend_stats success +%ld, fail +%ld; s2idle entered and woken %ld)",
		 t->r ? strerror(-t->r) : "returned 0", t->success, t->fail, t->woken);
	return b;
}

/*
 * (w) A request made active after the noirq phase of suspend-to-idle (the
 * test device's noirq suspend callback): s2idle_loop() finds the wakeup
 * event pending and returns without idling.  "qos" must fail with EAGAIN
 * and suspend_stats count a failure, not a success; the request is gone
 * afterwards and the next "qos" idles.
 */
void check_w(void)
{
	struct s2idle_try late, next;
	struct wsrow row;
	int r = s2idle_select();

	if (r) {
		report(0, "w", "cannot select s2idle with pm_test=none: %s", strerror(-r));
		return;
	}
	r = write_str(INJECT, "noirq e2e-s2idle");
	if (r) {
		s2idle_restore();
		report(0, "w", "inject: %s", strerror(-r));
		return;
	}
	s2idle_attempt("qos", &late);
	s2idle_attempt("qos", &next);
	s2idle_restore();
	report(late.r == -EAGAIN && late.success == 0 && late.fail == 1 && late.woken == 0 &&
		       ws_row("e2e-s2idle", &row) == -ENOENT && next.r == 0 && next.success == 1 &&
		       next.woken == 1,
	       "w", "s2idle, request made active in noirq suspend: qos %s; next qos %s",
	       s2idle_says(&late), s2idle_says(&next));
}

/*
 * (x) A suspend-to-idle entered and woken normally still succeeds: "qos"
 * with nothing held, and a forced "freeze" while a request is made active
 * in noirq suspend (forced suspend ignores requests), each return 0,
 * count a success and were woken once.
 */
void check_x(void)
{
	struct s2idle_try plain, forced;
	int r = s2idle_select();

	if (r) {
		report(0, "x", "cannot select s2idle with pm_test=none: %s", strerror(-r));
		return;
	}
	s2idle_attempt("qos", &plain);
	r = write_str(INJECT, "noirq e2e-s2idle-forced");
	if (r) {
		s2idle_restore();
		report(0, "x", "inject: %s", strerror(-r));
		return;
	}
	s2idle_attempt("freeze", &forced);
	s2idle_restore();
	report(plain.r == 0 && plain.success == 1 && plain.fail == 0 && plain.woken == 1 &&
		       forced.r == 0 && forced.success == 1 && forced.fail == 0 &&
		       forced.woken == 1,
	       "x", "s2idle woken normally: qos %s; freeze with a request made active in noirq suspend %s",
	       s2idle_says(&plain), s2idle_says(&forced));
}
