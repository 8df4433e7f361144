/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Busy detection.  A process "wants the CPU" for the time it ran, plus the CPU
 * of children it reaped (a forker is as busy as its children), plus the time
 * it waited on a run queue when it never blocked by itself during the window
 * (a spinner starved by the jail's idle class must not look idle; a sleeper
 * that woke every 10 ms and waited behind spinners is not busy).  Sources:
 * /proc/PID/schedstat and the voluntary switch count of /proc/PID/status, per
 * thread.  Counters move in ticks (4 ms): windows must be far longer.
 */
#ifndef QJ_SAMPLER_H
#define QJ_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ladder.h"
#include "proc.h"

/* Cumulative counters of one process. */
struct qj_demand {
	uint64_t cpu_ns; /* on a CPU, all threads */
	uint64_t wait_ns; /* runnable but waiting, all threads */
	uint64_t children_ns; /* reaped children's CPU */
	uint64_t voluntary; /* voluntary context switches, all threads */
	uint64_t slices; /* times a thread was given a CPU */
	uint64_t nonvoluntary; /* preemptions, all threads */
	bool runnable; /* a thread is in state R now */
	bool runnable_spinner; /* a runnable thread was preempted at least as often as it blocked */
};

struct qj_sample {
	pid_t pid;
	int fd; /* kept /proc/PID/schedstat: one pread per window for single-threaded tasks */
	int status_fd; /* kept /proc/PID/status; both -EBADF when not kept */
	bool have_base;
	uint64_t t0_usec;
	struct qj_demand base;
	uint64_t last_ns; /* demand counted in the last completed window */
	uint64_t last_window_usec;
	bool last_starved; /* runnable through the last window and given no CPU */
};

/*
 * Whether busy detection works on this kernel, judged from @proc_dir (a
 * /proc/PID directory of a task that has run, "/proc/self" for the daemon):
 * -EOPNOTSUPP when its schedstat is missing (no CONFIG_SCHED_INFO: every task
 * would look gone) or reads no run time (every task would look idle).
 */
int qj_sample_check(const char *proc_dir);
/*
 * Starts sampling @pid.  @keep: keep its /proc files open (one pread each per
 * read); else they are opened at each read, for when fds are scarce (10,000
 * tasks under a 20,000-fd limit).
 */
int qj_sample_open(struct qj_sample *s, pid_t pid, bool keep);
void qj_sample_close(struct qj_sample *s);
int qj_sample_read(struct qj_sample *s, const struct qj_proc_stat *st, struct qj_demand *ret);
/* Starts a new window at @now. */
int qj_sample_restart(struct qj_sample *s, const struct qj_proc_stat *st, uint64_t now_usec);
/*
 * The same, for a process whose /proc/PID/status (@ps) the caller read just
 * before: a single-threaded one's is not read again.
 */
int qj_sample_restart_status(struct qj_sample *s, const struct qj_proc_stat *st,
			     const struct qj_proc_status *ps, uint64_t now_usec);
/*
 * When a window of at least @window_usec has passed since the last restart:
 * classifies (BUSY, IDLE, or UNKNOWN for a starved window), starts the next
 * window and returns 1.  @use_history: judge a starved window by the task's
 * history.  Returns 0 while the window runs (*ret untouched), negative errno
 * (-ESRCH: gone).
 */
int qj_sample_observe(struct qj_sample *s, const struct qj_proc_stat *st, uint64_t now_usec,
		      uint64_t window_usec, double threshold, bool use_history,
		      enum qj_task_activity *ret);
/* Pure: the verdict for the window from @a to @b. */
enum qj_task_activity qj_demand_classify(const struct qj_demand *a, const struct qj_demand *b,
					 uint64_t window_usec, double threshold, bool use_history);
/* Pure: the demand between two readings (see the header comment). */
uint64_t qj_demand_delta_ns(const struct qj_demand *a, const struct qj_demand *b);
/*
 * Pure: the demand between two readings as a figure of the window from @a to @b,
 * @window_usec long, of a process with @threads threads: its CPU and its reaped
 * children's as the kernel counted them, and its run-queue wait no longer than
 * its threads can have waited within the window.  The kernel brings a starved
 * task's wait up to date only when it runs: 16 s of wait could land in a 300 ms
 * window, and the kill log said "busy, 16,040 ms of 300 ms".
 */
uint64_t qj_demand_window_ns(const struct qj_demand *a, const struct qj_demand *b,
			     uint64_t window_usec, unsigned threads);
/*
 * Pure: was the process runnable through the window from @a to @b and given no
 * CPU (no slice, no reaped child)?  Its run-queue wait is then not counted yet:
 * the kernel brings it up to date only when the task runs.
 */
bool qj_demand_starved(const struct qj_demand *a, const struct qj_demand *b);
/* Pure: does @demand_ns over @window_usec exceed @threshold of one CPU? */
bool qj_sample_is_busy(uint64_t demand_ns, uint64_t window_usec, double threshold);

/* Runnable tasks on the machine now, the caller not counted (/proc/loadavg). */
int qj_sample_runnable(unsigned *ret);

/* One window of an app's cgroup: the unit of demand. */
struct qj_app_window {
	uint64_t used_usec; /* cpu.stat usage_usec over the window */
	uint64_t stalled_usec; /* cpu.pressure "some" stall over the window (0 without PSI) */
	bool stall_excused; /* the stall is tasks still to take a signal of ours */
	bool no_stall; /* no PSI: no stall figure at all */
	uint64_t window_usec;
	/*
	 * What a runnable task got of one CPU on this machine over the window
	 * (qj_demand_share()); 0 when unknown: a whole CPU.  Weighs the CPU alone,
	 * when no stall says what the app wanted beyond it (excused, or no PSI).
	 */
	double share;
};
/*
 * Pure: the app's demand over @w (its CPU time, plus its stall unless excused: a task
 * starved at the idle class still wants the CPU) in *ret_demand_usec, and whether it
 * exceeds @threshold of one CPU.
 */
bool qj_demand_app_busy(const struct qj_app_window *w, double threshold, uint64_t *ret_demand_usec);
/*
 * Pure: what one runnable task gets of a CPU on @cpus CPUs (0: one) that @others
 * runnable tasks outside the jail want too: at most a whole CPU.
 */
double qj_demand_share(unsigned cpus, double others);

/* What a task's verdict may borrow from its app's window. */
struct qj_task_window {
	enum qj_task_activity activity; /* the task's own verdict (qj_sample_observe) */
	unsigned spawned; /* processes it started during the window, gone by its end */
	bool acted_on; /* a rung of this cycle was applied to it */
	bool runnable; /* 'R' in /proc/PID/stat now */
	bool signal_pending; /* the signal of its last rung was seen pending in the window */
	bool app_judged; /* its app has a complete window */
	bool app_busy; /* and that window was busy */
	/* Notified (SIGXCPU), not blocked since, within its CPU budget and half the bound. */
	bool notify_waiting;
	bool own_cpu_busy; /* its CPU alone, without the wait, was busy over the window */
};
/*
 * Pure: the task's verdict.  An idle forker (two or more processes started in the
 * window and gone by its end) of a busy app is busy: its children are too
 * short-lived to be caught.  A task
 * acted on and starved since (no complete window), runnable, of an app judged busy is
 * busy: that want is its own (a SIGTERM it ignores, starved at the idle class).  A busy
 * task acted on whose signal was pending in the window is unknown: what it wanted the
 * CPU for was to take the signal (a notified task starved before its handler ran).  A
 * notified task still winding down is judged by its CPU alone, not by its wait, and
 * does not borrow its app's verdict.
 */
enum qj_task_activity qj_demand_task_verdict(const struct qj_task_window *w);

#endif
