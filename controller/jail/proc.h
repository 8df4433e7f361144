/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* /proc/PID readers that take none of the target's locks: stat, status, schedstat, exe, timerslack_ns. */
#ifndef QJ_PROC_H
#define QJ_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct qj_proc_stat {
	char comm[64];
	char state; /* 'R', 'S', 'D', 'T', 't', 'Z', 'X', ... */
	pid_t ppid;
	unsigned flags; /* PF_*: PF_EXITING (0x4) while it exits */
	uint64_t utime, stime, cutime, cstime; /* clock ticks */
	unsigned num_threads;
	uint64_t start_time; /* field 22: clock ticks after boot; with the pid, the identity */
};

/* Parses the text of /proc/PID/stat (comm may contain spaces and parentheses). */
int qj_proc_stat_parse(const char *text, struct qj_proc_stat *ret);
int qj_proc_stat_read(pid_t pid, struct qj_proc_stat *ret);
/* Reads /proc/@rel/stat, e.g. "PID/task/TID". */
int qj_proc_stat_read_path(const char *rel, struct qj_proc_stat *ret);
#define QJ_PF_EXITING 0x00000004u
struct qj_proc_status {
	uid_t uid; /* real */
	uid_t uids[4]; /* real, effective, saved, filesystem */
	uint64_t sigcgt; /* caught signals: bit (sig - 1) */
	uint64_t sigpnd; /* pending for the thread */
	uint64_t shdpnd; /* pending for the process (a SIGSTOP not acted on yet sits here) */
	uint64_t voluntary_switches; /* times it blocked by itself */
	uint64_t nonvoluntary_switches; /* times it was preempted */
};

/* Parses /proc/PID/status (or /proc/PID/task/TID/status) text. */
int qj_proc_status_parse(const char *text, struct qj_proc_status *ret);
int qj_proc_status_read(pid_t pid, struct qj_proc_status *ret);
/* schedstat: on-CPU ns, run-queue wait ns, times it was given a CPU. */
int qj_proc_schedstat_parse(const char *text, uint64_t *ret_cpu_ns, uint64_t *ret_wait_ns,
			    uint64_t *ret_slices);
/* readlink /proc/PID/exe (allocated); "" for kernel threads. */
int qj_proc_exe(pid_t pid, char **ret);
/*
 * No /proc/PID/cmdline reader here: that read waits on the process's mmap_lock, which the
 * process can keep contended.  jail/procread.h reads it off the loop thread.
 */
/* /proc/PID/task/TID/timerslack_ns. */
int qj_proc_timerslack_get(pid_t tid, uint64_t *ret);
int qj_proc_timerslack_set(pid_t tid, uint64_t ns);
/*
 * Whether the process behind @pidfd has exited (the pidfd polls readable).  poll(2),
 * not pidfd_send_signal(): it also works where only pidfds handed by the kernel
 * (SO_PEERPIDFD) do, e.g. under valgrind 3.19.
 */
bool qj_pidfd_exited(int pidfd);
/*
 * Sets @tid's timer slack only if @tid is still the thread that started at
 * @start_time (stat field 22): the file is opened first, and an open /proc
 * file stays bound to its task, so a reused tid is never written.  -ESRCH when
 * the thread is gone or the tid reused.
 */
int qj_proc_timerslack_set_if_same(pid_t tid, uint64_t start_time, uint64_t ns);
/*
 * The state of a process whose main thread exited (its stat says Z while
 * other threads run), judged by its live threads: 'T' when all are stopped,
 * 'R' when one is runnable, 'S' otherwise, 'Z' when none is left.
 */
int qj_proc_threads_state(pid_t pid, char *ret);
/*
 * 1 when a thread of @pid is stopped: a group stop has taken effect (its
 * SIGSTOP dequeued), although the main thread may not have stopped yet.
 */
int qj_proc_some_thread_stopped(pid_t pid);
/*
 * 1 when a group stop of @pid is under way: a thread stopped, and another that
 * can still run has not stopped yet.  A thread in 'D' (a FUSE or NFS read that
 * never returns) takes the stop only when its wait ends; meanwhile it runs
 * nothing, so it does not count as one still to stop.
 */
int qj_proc_stop_under_way(pid_t pid);
/* Thread ids of @pid (allocated). */
int qj_proc_tids(pid_t pid, pid_t **ret, size_t *ret_n);

#endif
