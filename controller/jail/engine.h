/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The jail engine: owns the jail cgroups, membership (launcher placement and
 * policy matching from process events), QOS_NONE switching and the escalation
 * ladder during a quiesce.  The daemon's event loop drives it; the suspend
 * cycle (daemon/cycle.c) decides when.  All times are CLOCK_MONOTONIC microseconds.
 */
#ifndef QJ_ENGINE_H
#define QJ_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ladder.h"

struct qj_engine;
struct qj_killlog;
struct qj_policy;

struct qj_engine_counts {
	unsigned apps; /* app groups in the jail */
	unsigned tasks; /* jailed processes */
	unsigned busy; /* jailed processes that did not block in the last window */
	unsigned stopped; /* processes qosjail holds stopped */
	unsigned frozen; /* app groups qosjail froze */
	unsigned killed; /* processes killed in the current/last cycle */
	unsigned resyncs; /* process-event overruns resynchronised from /proc, since start */
	/* While quiescing: the app the quiesce waits for and why ("" when none). */
	char holding_app[QJ_POLICY_NAME_MAX + 1];
	char holding[96];
	uint64_t holding_next_usec; /* when that may change (CLOCK_MONOTONIC), or USEC_INFINITY */
	uint64_t bound_usec; /* the policy's quiesce bound */
	uint64_t quiesce_usec; /* how long the current quiesce has run (took, once every task
				* blocked), 0 when none */
};

/*
 * Detects the cgroup layout (pure v2, hybrid, v1-only), creates the jail and
 * undoes whatever a previous instance left stopped or frozen (state kept in
 * @state_dir).  @log may be NULL (no kill log, tests).
 */
int qj_engine_new(const struct qj_policy *p, struct qj_killlog *log, const char *state_dir,
		  struct qj_engine **ret);
/* Frees memory only; call qj_engine_restore() first to leave nothing stopped. */
struct qj_engine *qj_engine_free(struct qj_engine *e);
/* Atomic policy swap after a successful reload (creates groups of new apps). */
int qj_engine_set_policy(struct qj_engine *e, const struct qj_policy *p);

/* Process-event socket for the daemon's epoll loop (-1 when unavailable). */
int qj_engine_procmon_fd(const struct qj_engine *e);
/* Call when the procmon fd is readable: classify new processes, resync on overrun. */
int qj_engine_on_procmon(struct qj_engine *e);

/* Moves every thread of @pid into @app's group.  -ENOENT unknown app, -ESRCH gone. */
int qj_engine_place(struct qj_engine *e, const char *app, pid_t pid);
/* O_DIRECTORY|O_PATH fd of @app's cgroup2 group, for clone3(CLONE_INTO_CGROUP). */
int qj_engine_open_cgroup(struct qj_engine *e, const char *app, int *ret_fd);
/* 1 and *ret_app (borrowed) when @pid is jailed, 0 when not, negative errno. */
int qj_engine_app_of_pid(struct qj_engine *e, pid_t pid, const char **ret_app);
/*
 * Process @pid (@pidfd pins it) consents to the notify rung: it handles SIGXCPU
 * as "the system wants to suspend".  Kept until the process exits.  -EPERM when
 * it is not jailed, -ESRCH when it is gone, -ENOSPC past the table's bound.
 */
int qj_engine_notify_consent(struct qj_engine *e, pid_t pid, int pidfd);

/* Jail to QOS_NONE, start the first sample window of cycle @cycle. */
int qj_engine_quiesce_begin(struct qj_engine *e, uint64_t cycle, uint64_t now_usec);
/*
 * Samples, applies due rungs, logs every action.  Returns 1 when every jailed
 * task is blocked (stopped, frozen, gone or idle), 0 when not yet: call again
 * at *ret_next_usec.  Negative errno on failure.
 */
int qj_engine_quiesce_step(struct qj_engine *e, uint64_t now_usec, uint64_t *ret_next_usec);
/* Abort or resume: SIGCONT what qosjail stopped, thaw, restore normal QoS. */
int qj_engine_restore(struct qj_engine *e, const char *why);

/*
 * Dark wakes (jail/darkwake.c): the suspend returned and no hold wants the jail back.
 * Keeps it as it is (a summary record with kept: true, the strikes counted) and notes
 * its CPU usage.  -ESTALE when it is not quiesced.
 */
int qj_engine_keep_quiesced(struct qj_engine *e, const char *why);
/*
 * Cycle @cycle takes the kept jail over: 1 (quiesced, no sample window) when nothing
 * in it ran since qj_engine_keep_quiesced(); else it is restored and a quiesce begins
 * as qj_engine_quiesce_begin() does, and 0 (step at *ret_next_usec).  Negative errno.
 */
int qj_engine_quiesce_kept(struct qj_engine *e, uint64_t cycle, uint64_t now_usec,
			   uint64_t *ret_next_usec);

int qj_engine_counts(const struct qj_engine *e, struct qj_engine_counts *ret);
/*
 * Calls @cb for every (app, rung) with the rung actions taken against the app (its
 * tasks or its group) since the engine started; a negative return from @cb stops
 * the walk and is returned.
 */
int qj_engine_foreach_action_count(const struct qj_engine *e,
				   int (*cb)(const char *app, const char *rung,
					     enum qj_action action, uint64_t n, void *userdata),
				   void *userdata);
/*
 * The @i-th app of the policy and the processes in its group now: 1 for a jailed
 * app, 0 for a trusted one (*ret_tasks 0), -ENOENT past the end, negative errno.
 */
int qj_engine_app_tasks(const struct qj_engine *e, size_t i, const char **ret_app,
			unsigned *ret_tasks);

/* What the engine knows of one process and would do to it (qosjailctl explain). */
struct qj_engine_explain {
	uid_t uid; /* the process's real uid */
	bool jailed; /* in an app group of the jail */
	char app[QJ_POLICY_NAME_MAX +
		 1]; /* its group when jailed, else the app its match rules name; "" */
	const struct qj_app *policy_app; /* the policy's entry for @app; NULL when none */
	bool quiescing; /* a cycle is quiescing the jail now */
	bool tracked; /* in this cycle's task table */
	enum qj_task_activity activity; /* when tracked: the last measurement */
	int rung; /* when tracked: the last rung applied this cycle, -1 none */
	bool stopped_by_us;
	bool frozen; /* its group is frozen by qosjail */
	unsigned strikes; /* of its app, before this cycle */
	bool catches_sigxcpu;
	bool consents; /* asked for the notification through libqosjail */
	int first_rung; /* where a busy task of its app starts on the ladder, -1 none */
	char holding[96]; /* its app holds the quiesce up: why and what comes next; "" */
	/*
	 * Not jailed, and its cmdline decides whether (or where) its next exec is jailed,
	 * but none was given: @app is where it goes when the cmdline cannot be read.
	 */
	bool cmdline_unknown;
};

/*
 * Fills @ret for @pid from reads that take none of its locks; @cmdline (NULL: not read)
 * is what qj_engine_read_cmdline() answered.  -ESRCH when there is no such process.
 */
int qj_engine_explain(struct qj_engine *e, pid_t pid, const char *cmdline,
		      struct qj_engine_explain *ret);

/*
 * The off-thread /proc reader (jail/procread.h): its fd for the daemon's loop, and the
 * call when it is readable.  Returns how many processes exec matching jailed from the
 * answers (membership changed), or negative errno.
 */
int qj_engine_procread_fd(const struct qj_engine *e);
int qj_engine_on_procread(struct qj_engine *e);
/*
 * Reads @pid's cmdline (a process of @uid) off the loop thread for a caller; @done is
 * called once from qj_engine_on_procread() (see qj_procread_submit() for its errors).
 * Refused (-EBUSY) while a read of that uid's processes is stuck.
 */
int qj_engine_read_cmdline(struct qj_engine *e, pid_t pid, uid_t uid,
			   void (*done)(int r, const char *cmdline, void *userdata), void *userdata,
			   uint64_t *ret_id);
void qj_engine_cancel_read(struct qj_engine *e, uint64_t id);
/* cmdline reads abandoned stuck (their readers wait for the process's lock). */
unsigned qj_engine_stuck_reads(const struct qj_engine *e);
/* cmdline reads under way now, stuck or not: threads that cannot be stopped or joined. */
unsigned qj_engine_reads_running(const struct qj_engine *e);

#endif
