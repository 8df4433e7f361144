// SPDX-License-Identifier: LGPL-2.1-or-later
/* The demand verdicts of busy detection (jail/sampler.c): an app's window, a task's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sampler.h"
#include "util.h"

#define W (1000 * USEC_PER_MSEC)

static void test_demand_app_busy(void **state)
{
	static const struct {
		const char *what;
		struct qj_app_window w;
		uint64_t demand;
		bool busy;
	} cases[] = {
		{ "idle", { .used_usec = 10000, .window_usec = W }, 10000, false },
		{ "busy on CPU time alone", { .used_usec = 60000, .window_usec = W }, 60000, true },
		{ "threshold is exclusive", { .used_usec = 50000, .window_usec = W }, 50000, false },
		{ "stall counts: starved at the idle class, it still wants the CPU",
		  { .used_usec = 10000, .stalled_usec = 45000, .window_usec = W },
		  55000,
		  true },
		{ "an excused stall does not count (our signal not yet taken)",
		  { .used_usec = 10000,
		    .stalled_usec = 45000,
		    .stall_excused = true,
		    .window_usec = W },
		  10000,
		  false },
		{ "an empty window is never busy", { .used_usec = 60000 }, 60000, false },
		{ "loaded machine: 4% of a CPU where a task gets 7% of one is busy (PSI off)",
		  { .used_usec = 20000, .window_usec = 487000, .share = 0.067, .no_stall = true },
		  20000,
		  true },
		{ "the same with its stall excused (waiting for our signal): its CPU is busy",
		  { .used_usec = 20000,
		    .stalled_usec = 400000,
		    .stall_excused = true,
		    .window_usec = 487000,
		    .share = 0.067 },
		  20000,
		  true },
		{ "with PSI its stall says what it wanted: the share is not applied",
		  { .used_usec = 20000, .window_usec = 487000, .share = 0.067 },
		  20000,
		  false },
		{ "loaded machine: a tick of CPU is not (counters move in 4 ms ticks)",
		  { .used_usec = 4000, .window_usec = 300000, .share = 0.05, .no_stall = true },
		  4000,
		  false },
		{ "an idle machine: a whole CPU, as before",
		  { .used_usec = 40000, .window_usec = W, .share = 1.0 },
		  40000,
		  false },
		{ "no overflow",
		  { .used_usec = UINT64_MAX, .stalled_usec = 5, .window_usec = W },
		  UINT64_MAX,
		  true },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		uint64_t demand = 0;

		print_message("%s\n", cases[i].what);
		assert_int_equal(qj_demand_app_busy(&cases[i].w, 0.05, &demand), cases[i].busy);
		assert_int_equal(demand, cases[i].demand);
	}
}

/* What a runnable task gets of a CPU: the CPUs shared with the others that want one. */
static void test_demand_share(void **state)
{
	(void)state;
	assert_true(qj_demand_share(2, 0) == 1.0); /* an idle machine: a whole CPU */
	assert_true(qj_demand_share(2, 1) == 1.0);
	assert_true(qj_demand_share(2, 3) == 0.5);
	assert_true(qj_demand_share(2, 25) > 0.07 && qj_demand_share(2, 25) < 0.08);
	assert_true(qj_demand_share(0, 3) == 0.25); /* unknown CPUs: one */
}

/* The figure of a window never says more than the kernel can have counted in it. */
static void test_demand_window_figure(void **state)
{
	static const struct {
		const char *what;
		struct qj_demand a, b;
		uint64_t window_usec;
		unsigned threads;
		uint64_t want_ns;
	} cases[] = {
		{ "a spinner: its CPU",
		  { .slices = 1 },
		  { .cpu_ns = 290000000, .slices = 9 },
		  300000,
		  1,
		  290000000 },
		{ "starved 16 s, then ran: its wait is the window's at most",
		  { .cpu_ns = 1000000, .slices = 5, .runnable = true },
		  { .cpu_ns = 41000000, .wait_ns = 16000000000ULL, .slices = 6, .runnable = true },
		  300000,
		  1,
		  300000000 },
		{ "two threads wait twice as long",
		  { .slices = 5 },
		  { .cpu_ns = 100000000, .wait_ns = 9000000000ULL, .slices = 6 },
		  300000,
		  2,
		  600000000 },
		{ "CPU on two CPUs is what it is",
		  { .slices = 5 },
		  { .cpu_ns = 590000000, .slices = 80 },
		  300000,
		  2,
		  590000000 },
		{ "reaped children's CPU is theirs, whatever the window",
		  { .slices = 5 },
		  { .cpu_ns = 1000000, .children_ns = 900000000, .slices = 6 },
		  300000,
		  1,
		  901000000 },
		{ "a task that blocked: no wait counted",
		  { .slices = 5 },
		  { .cpu_ns = 1000000, .wait_ns = 5000000, .voluntary = 3, .slices = 9 },
		  300000,
		  1,
		  1000000 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t got = qj_demand_window_ns(&cases[i].a, &cases[i].b, cases[i].window_usec,
						   cases[i].threads);

		if (got != cases[i].want_ns)
			fail_msg("%s: %llu ns, want %llu ns", cases[i].what,
				 (unsigned long long)got, (unsigned long long)cases[i].want_ns);
	}
}

static void test_demand_task_verdict(void **state)
{
	static const struct {
		const char *what;
		struct qj_task_window w;
		enum qj_task_activity want;
	} cases[] = {
		{ "busy stays busy", { .activity = QJ_TASK_BUSY }, QJ_TASK_BUSY },
		{ "idle stays idle", { .activity = QJ_TASK_IDLE, .app_busy = true }, QJ_TASK_IDLE },
		{ "idle forker of a busy app is busy",
		  { .activity = QJ_TASK_IDLE, .spawned = 2, .app_judged = true, .app_busy = true },
		  QJ_TASK_BUSY },
		{ "one child is not a forker",
		  { .activity = QJ_TASK_IDLE, .spawned = 1, .app_judged = true, .app_busy = true },
		  QJ_TASK_IDLE },
		{ "a forker of a quiet app is idle",
		  { .activity = QJ_TASK_IDLE, .spawned = 50, .app_judged = true },
		  QJ_TASK_IDLE },
		{ "acted on, starved, runnable, app busy: busy",
		  { .activity = QJ_TASK_UNKNOWN,
		    .acted_on = true,
		    .runnable = true,
		    .app_judged = true,
		    .app_busy = true },
		  QJ_TASK_BUSY },
		{ "starved but sleeping: unknown",
		  { .activity = QJ_TASK_UNKNOWN,
		    .acted_on = true,
		    .app_judged = true,
		    .app_busy = true },
		  QJ_TASK_UNKNOWN },
		{ "starved, never acted on: unknown",
		  { .activity = QJ_TASK_UNKNOWN,
		    .runnable = true,
		    .app_judged = true,
		    .app_busy = true },
		  QJ_TASK_UNKNOWN },
		{ "app not judged yet: unknown",
		  { .activity = QJ_TASK_UNKNOWN,
		    .acted_on = true,
		    .runnable = true,
		    .app_busy = true },
		  QJ_TASK_UNKNOWN },
		{ "busy, acted on, its signal pending in the window: unknown",
		  { .activity = QJ_TASK_BUSY, .acted_on = true, .signal_pending = true },
		  QJ_TASK_UNKNOWN },
		{ "busy with a signal pending, never acted on: busy",
		  { .activity = QJ_TASK_BUSY, .signal_pending = true },
		  QJ_TASK_BUSY },
		{ "notified, winding down, starved in a busy app: unknown",
		  { .activity = QJ_TASK_UNKNOWN,
		    .acted_on = true,
		    .runnable = true,
		    .app_judged = true,
		    .app_busy = true,
		    .notify_waiting = true },
		  QJ_TASK_UNKNOWN },
		{ "notified, its wait busy but its own CPU not: unknown",
		  { .activity = QJ_TASK_BUSY, .acted_on = true, .notify_waiting = true },
		  QJ_TASK_UNKNOWN },
		{ "notified and spinning on its own CPU: busy",
		  { .activity = QJ_TASK_BUSY,
		    .acted_on = true,
		    .notify_waiting = true,
		    .own_cpu_busy = true },
		  QJ_TASK_BUSY },
		{ "stopped stays stopped",
		  { .activity = QJ_TASK_STOPPED,
		    .spawned = 3,
		    .acted_on = true,
		    .app_judged = true,
		    .app_busy = true },
		  QJ_TASK_STOPPED },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		print_message("%s\n", cases[i].what);
		assert_int_equal(qj_demand_task_verdict(&cases[i].w), cases[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_demand_app_busy),
		cmocka_unit_test(test_demand_task_verdict),
		cmocka_unit_test(test_demand_window_figure),
		cmocka_unit_test(test_demand_share),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
