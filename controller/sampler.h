/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Busy detection.  A process "wants the CPU" for the time it ran plus the time
 * it waited on a run queue (/proc/PID/schedstat, per thread), plus the CPU of
 * children it reaped (a forker is as busy as its children).  Counting the wait
 * keeps a starved task (jail at cpu.idle on a loaded machine) from looking
 * idle.  Counters move in ticks (4 ms): windows must be far longer.
 */
#ifndef QJ_SAMPLER_H
#define QJ_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ladder.h"
#include "proc.h"

struct qj_sample {
	pid_t pid;
	int fd; /* kept /proc/PID/schedstat: one pread per window for single-threaded tasks */
	bool have_base;
	uint64_t t0_usec;
	uint64_t base_ns;
	uint64_t last_ns; /* demand in the last completed window */
	uint64_t last_window_usec;
};

int qj_sample_open(struct qj_sample *s, pid_t pid);
void qj_sample_close(struct qj_sample *s);
/* Running + waiting ns of every thread, plus reaped children's CPU. */
int qj_sample_demand_ns(struct qj_sample *s, const struct qj_proc_stat *st, uint64_t *ret);
/* Starts a new window at @now. */
int qj_sample_restart(struct qj_sample *s, const struct qj_proc_stat *st, uint64_t now_usec);
/*
 * When a window of at least @window_usec has passed since the last restart:
 * classifies (BUSY or IDLE), starts the next window and returns 1.  Returns 0
 * while the window runs (*ret untouched), negative errno (-ESRCH: gone).
 */
int qj_sample_observe(struct qj_sample *s, const struct qj_proc_stat *st, uint64_t now_usec,
		      uint64_t window_usec, double threshold, enum qj_task_activity *ret);
/* Pure: does @demand_ns over @window_usec exceed @threshold of one CPU? */
bool qj_sample_is_busy(uint64_t demand_ns, uint64_t window_usec, double threshold);

#endif
