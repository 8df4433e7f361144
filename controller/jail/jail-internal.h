/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the jail engine's files share (private to controller/jail/): the engine's state
 * (tasks, apps, follows, consents) and each file's entry points, listed bottom up.
 */
#ifndef QJ_JAIL_INTERNAL_H
#define QJ_JAIL_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup.h"
#include "engine.h"
#include "killlog.h"
#include "ladder.h"
#include "policy.h"
#include "proc.h"
#include "procmon.h"
#include "sampler.h"
#include "util.h"

struct exec_match;
struct qj_procread;

#define STATE_FILE "jail-state.json"
/* How soon to look again after a stop, kill or freeze: they take effect at once. */
#define CONFIRM_USEC (10 * USEC_PER_MSEC)
/* How long a process acted on in a cycle is followed after the restore. */
#define FOLLOW_AFTER_USEC (10 * USEC_PER_SEC)
#define MAX_FOLLOW 1024
/*
 * Processes that consented to the notify rung through libqosjail, at most, per app: each
 * app has its own share, so one app's processes never take another's room (the table is
 * bounded by the policy's apps times this).
 */
#define MAX_CONSENTS_PER_APP 256
/* Pids a group action's kill-log record lists (its task count is exact). */
#define GROUP_PIDS_MAX 32

/*
 * A process acted on in a cycle, followed until it exits or FOLLOW_AFTER_USEC
 * after the restore: a death the daemon caused (a SIGXCPU handler that
 * re-raises it, a program that dies when continued) is logged with its
 * signal, from the exit event.
 */
struct follow {
	pid_t pid;
	int pidfd;
	uint64_t cycle;
	uint64_t until_usec; /* USEC_INFINITY while its cycle runs */
	char *app;
	char comm[64];
	char *exe;
	uid_t uid;
	const char *after; /* the last action taken on it */
	int exit_code; /* the process's, as wait(2) would report it (see qj_eng_on_exit_event()) */
	bool have_code;
	bool leader_exited; /* the exit event of its main thread was read */
	uint64_t dead_usec; /* when its pidfd was first seen readable without an exit code */
};

/* A process that asked for the notify rung (qj_notify_consent()); kept until it exits. */
struct consent {
	pid_t pid;
	int pidfd;
	uint64_t start_time;
	char *app; /* the app it consented in: whose share it takes */
};

/*
 * Where a task, or an app's group as a whole, stands on the ladder in the current
 * cycle: the same for both, so one decide-and-apply (qj_eng_rung_step()) serves both.
 */
struct rung_state {
	int rung; /* the last rung applied, -1 none */
	uint64_t applied_usec;
	uint64_t applied_realtime_usec;
	bool pending; /* its kill-log record waits for the outcome */
};

struct slack {
	pid_t tid;
	uint64_t start_time; /* the thread's: a restarted daemon checks it before undoing */
	uint64_t old_ns;
};

/*
 * The undo record: what the cycle changed that the restore, or a restarted daemon
 * (restart.c saves it in the state file), must put back.  A task's:
 */
struct task_undo {
	bool stopped; /* stopped by the cycle, not continued since */
	struct slack *slack; /* timer slack raised, a thread each */
	size_t n_slack;
};

/* An app's (its strikes are kept over cycles and restarts too). */
struct app_undo {
	bool frozen; /* frozen by the cycle */
	unsigned strikes; /* before the current cycle */
};

struct task {
	pid_t pid;
	int pidfd;
	uint64_t start_time;
	char *app;
	char comm[64];
	char *exe; /* read before its first action (qj_eng_task_exe()) */
	uid_t uid;
	pid_t ppid;
	unsigned spawned; /* new jailed processes it started in the current window */
	uint64_t added_usec; /* when the engine began to track it */
	bool catches_sigxcpu;
	bool consents; /* asked for the notification itself */
	struct qj_sample sample;
	enum qj_task_activity activity;
	unsigned seen; /* rescan generation */
	bool gone;
	struct task_undo undo;
	/*
	 * The cycle sent it SIGSTOP: the restore continues it whatever state it
	 * was last seen in (a stop seen "continued" may still take effect).
	 */
	bool sent_stop;
	bool killed_by_us;
	/* Its SIGSTOP is queued, not taken (or it is inside its exit): it counts as stopped, its record waits. */
	bool stop_queued;
	bool by_group; /* acted on by a group rung: the app's record covers it */
	unsigned threads; /* at the last look: a group stop needs two */
	/* When the signal of its last rung was last seen pending (not yet taken). */
	uint64_t sig_seen_usec;
	/* Sent SIGXCPU and not seen blocked since: winding down, if it listens. */
	bool notified;
	uint64_t notify_cpu_ns; /* its CPU when notified */
	/* Its own rungs (a group rung sets rung and applied_usec, the app's record covers it). */
	struct rung_state ladder;
	const char *pending_reason;
	uint64_t pending_cpu_ms;
	uint64_t pending_window_ms;
	/* darkwake.c: its SIGSTOP still pending when the jail was kept, its CPU then. */
	bool kept_settling;
	uint64_t kept_cpu_ns;
};

/* Rung actions taken against an app since the daemon started (qosjailctl metrics). */
struct action_count {
	char *rung; /* the rung's name when it was taken */
	enum qj_action action;
	uint64_t n;
};

struct app_state {
	char *name;
	struct action_count *counts;
	size_t n_counts;
	struct app_undo undo;
	bool struck; /* escalated past a notification in the current cycle */
	/* Group demand (cpu.stat usage + cpu.pressure stall) over the last window. */
	bool have_base;
	uint64_t t0_usec;
	uint64_t base_usec;
	uint64_t base_stall_usec;
	bool busy;
	bool judged; /* busy comes from a whole window begun after the app's last action */
	/*
	 * Acted on this step: its window's base (usage, signals still pending) is
	 * taken once at the end of the step, not once per task acted on (O(n^2)).
	 */
	bool restart_due;
	/* The signal of a rung was still pending on a task of it when its window began. */
	bool pending_at_start;
	bool stop_queued_at_start; /* a SIGSTOP queued, not taken: its wait is ours */
	/* The machine's runnable tasks outside the jail (engine sums) when its window began. */
	double others_base_sum;
	unsigned others_base_n;
	bool suspect; /* its last judged window was busy: it holds the quiesce until judged idle */
	uint64_t last_cpu_ms, last_window_ms;
	/* Per step (the rest of the step's scratch is step.c's struct step). */
	unsigned new_tasks; /* tasks of it the last rescan found */
	/* The group ladder: rungs for the app as a whole, when its tasks cannot explain it. */
	struct rung_state ladder;
	bool g_sweeping; /* stop/term sweep until cgroup.procs is stable */
	unsigned g_n; /* tasks the group action reached */
	pid_t g_pids[GROUP_PIDS_MAX];
	uint64_t g_cpu_ms, g_window_ms;
	/* Why the quiesce waits for it, for status and explain ("" when it does not). */
	char holding[96];
	uint64_t holding_next_usec;
};

/*
 * What a rung action does (rungops.c: one row an action, beside the rung table of
 * policy/actions.c).  rungs.c, the step and the restore read only the row.
 */
struct rung_ops {
	/* Performs it on task @t of @a: 0, or -errno (-ESRCH: gone). */
	int (*task)(struct qj_engine *e, struct app_state *a, struct task *t);
	/* Its group form, at once on @a's group (cgroup.freeze, cgroup.kill): 0 or -errno. */
	int (*group)(struct qj_engine *e, struct app_state *a);
	/*
	 * Or its group form is @task sent to each task of the group that @reached() says
	 * has not had it, again at each step until cgroup.procs is stable.
	 */
	bool sweep;
	bool (*reached)(const struct task *t);
	/* Already in effect for the task's whole group: nothing to do (NULL: never). */
	bool (*in_effect)(const struct app_state *a);
	bool notifies; /* asks the task to wind down: its CPU budget counts from the send */
	bool stops; /* its effect is the stopped state, which another's SIGCONT undoes */
	bool kills; /* the group form's outcome, once the app is quiet, is "killed" */
	bool kills_at_restore; /* and at the restore (a SIGTERM's handler may still be due) */
};

struct qj_engine {
	const struct qj_policy *p;
	struct qj_killlog *log;
	char *state_file;
	struct qj_cgroup *cg;
	struct qj_procmon *pm;
	struct qj_procread *pr; /* cmdline reads off the loop thread */
	unsigned placed_async; /* processes jailed when a cmdline read answered */
	struct exec_match **backlog; /* matches waiting for room in the reader's queue */
	size_t n_backlog;

	struct app_state *apps;
	size_t n_apps;

	bool quiescing;
	uint64_t cycle;
	uint64_t begin_usec;
	uint64_t quiesced_usec;
	unsigned generation;
	struct task *tasks; /* sorted by pid */
	size_t n_tasks;
	unsigned n_actions;
	unsigned n_killed;
	unsigned n_stopped_cycle;
	uint64_t jail_usage_begin;
	bool state_dirty; /* undo state changed since the last save_state() */
	bool strikes_dirty; /* a strike counted that the state file has not fsync'd yet */
	int keep_fds_below; /* a task's /proc files are kept open when its pidfd is below */
	/* The machine's load, for an app's share of it (qj_demand_share()). */
	unsigned cpus;
	double others_sum; /* runnable tasks outside the jail, summed over steps */
	unsigned others_n; /* steps summed */
	double others_now; /* at the last step */
	unsigned jail_running, jail_running_now; /* jailed tasks seen in 'R': last step, this one */
	unsigned resyncs;

	struct follow *follows;
	size_t n_follows;

	struct consent *consents;
	size_t n_consents;
	bool watch_dirty; /* the follow list changed: update the exit-event filter */

	/* darkwake.c: quiesced since the last suspend, and the jail's usage then. */
	bool kept;
	uint64_t kept_usage_usec;
};

/*
 * The engine's files, each using only those listed before it (tests/layout/check-links
 * fails on a cycle).
 */

/* apps.c: per-app state. */
struct app_state *qj_eng_app_state(struct qj_engine *e, const char *name);
/* One more action of @rung against @a; not counted (logged) when out of memory. */
void qj_eng_count_action(struct app_state *a, const struct qj_rung *rung);
/* The cycle ended (restored or kept): each app's strike in it counts, and waits for fsync. */
void qj_eng_count_strikes(struct qj_engine *e);

/* killrec.c: the ladder's kill-log records. */
/* Appends @o (consumed; NULL after an OOM is dropped) to the kill log. */
void qj_eng_append_record(struct qj_engine *e, json_t *o);
const char *qj_eng_gone_outcome(const struct task *t);
void qj_eng_log_action(struct qj_engine *e, struct task *t, const char *outcome);
void qj_eng_log_group(struct qj_engine *e, struct app_state *a, const char *outcome);
/*
 * The cycle's summary record (why it ended, its figures); @kept: the jail stays quiesced
 * (a dark wake), nothing was continued or thawed.
 */
void qj_eng_log_summary(struct qj_engine *e, const char *why, uint64_t now, bool kept,
			unsigned continued, unsigned thawed);

/* follow.c: deaths after a cycle. */
struct follow *qj_eng_find_follow(struct qj_engine *e, pid_t pid);
void qj_eng_follow_remove(struct qj_engine *e, struct follow *f);
void qj_eng_follow_sync(struct qj_engine *e);
void qj_eng_follow_add(struct qj_engine *e, const struct task *t, const char *action);
void qj_eng_follow_prune(struct qj_engine *e, uint64_t now);
void qj_eng_on_exit_event(struct qj_engine *e, const struct qj_proc_event *ev);
void qj_eng_follows_free(struct qj_engine *e);

/* consent.c: notify consent. */
void qj_eng_consents_prune(struct qj_engine *e);
bool qj_eng_consented(struct qj_engine *e, pid_t pid, uint64_t start_time);
void qj_eng_consents_free(struct qj_engine *e);

/* tasks.c: the task table and timer slack. */
/* qsort() order of the tracked tasks: by pid. */
int qj_eng_cmp_task(const void *a, const void *b);
struct task *qj_eng_find_task(struct qj_engine *e, pid_t pid);
/*
 * Tracks @pid of @app through @pidfd (taken over, closed on failure), which the caller
 * opened before it saw @pid in @app's cgroup.procs: the pidfd is the jailed process (a pid
 * is not reused while its process lives).  @v1_in: its main thread is in @app's v1 cpu group.
 * @keep_files: its /proc files are kept open (while fds are plenty).
 */
int qj_eng_add_task(struct qj_engine *e, const char *app, pid_t pid, int pidfd, bool v1_in,
		    bool keep_files, uint64_t now, struct task *ret);
int qj_eng_send_signal(struct task *t, int sig);
/*
 * Reads @t's executable for its records, before the first action on it (a killed task
 * loses the link): only what is acted on needs it, not every task a cycle tracks.
 */
void qj_eng_task_exe(struct task *t);
void qj_eng_task_done(struct task *t);
void qj_eng_tasks_clear(struct qj_engine *e);
void qj_eng_mark_gone(struct qj_engine *e, struct task *t);
void qj_eng_slack_restore(struct qj_engine *e, struct task *t);

/* rungops.c: what each rung action does. */
/* The row of the policy's rung @rung (an empty row for an action without one). */
const struct rung_ops *qj_eng_rung_ops(const struct qj_engine *e, int rung);
const struct rung_ops *qj_eng_action_ops(enum qj_action a);
/* @pid was reached by @a's group rung: listed in its record (at most GROUP_PIDS_MAX). */
void qj_eng_group_note(struct app_state *a, pid_t pid);

/* observe.c: a task's activity. */
int qj_eng_observe(struct qj_engine *e, struct task *t, uint64_t now);
bool qj_eng_task_signal_pending(struct qj_engine *e, struct task *t);
bool qj_eng_notify_wait(const struct qj_engine *e, const struct task *t, uint64_t now);

/* restart.c */
int qj_eng_save_state(struct qj_engine *e);
int qj_eng_cont_if_same(pid_t pid, uint64_t start_time);
int qj_eng_load_and_undo_state(struct qj_engine *e);
int qj_eng_sweep_jail(struct qj_engine *e);

/* membership.c */
/* The proc connector callback: exec matching, exits of followed processes. */
int qj_eng_on_event(const struct qj_proc_event *ev, void *ud);
const struct qj_app *qj_eng_jailed_app(const struct qj_engine *e, const char *name);
/* Frees the matches waiting for the reader's queue (after the reader is freed). */
void qj_eng_backlog_free(struct qj_engine *e);
int qj_eng_rescan(struct qj_engine *e, uint64_t now);

/* appdemand.c: group demand. */
int qj_eng_sample_groups(struct qj_engine *e, uint64_t now);
void qj_eng_group_restart(struct qj_engine *e, struct app_state *a, uint64_t now);
void qj_eng_group_restarts_flush(struct qj_engine *e);

/* rungs.c: a rung decided and performed on a task or a group. */
/*
 * The one decide-and-apply of both ladders: the next rung of task @t of @a, or of @a's
 * group as a whole (@t NULL: judged busy, it neither handles SIGXCPU nor consents),
 * from its rung state; performed now when due.  *ret is the ladder's decision.  Returns
 * 1 when a rung was performed, 0 when none was (or its action was already in effect),
 * -errno when it failed (-ENOMEM fails the step; other errors are logged).
 */
int qj_eng_rung_step(struct qj_engine *e, struct app_state *a, struct task *t, uint64_t now,
		     struct qj_ladder_decision *ret);
/* Sends @a's group rung to every task of it not yet reached: how many it reached, -errno. */
int qj_eng_group_sweep(struct qj_engine *e, struct app_state *a, uint64_t now);

/* step.c: the quiesce. */
int qj_eng_quiesce_begin(struct qj_engine *e, uint64_t cycle, uint64_t now_usec);
int qj_eng_quiesce_step(struct qj_engine *e, uint64_t now_usec, uint64_t *ret_next_usec);

/* restore.c */
int qj_eng_restore(struct qj_engine *e, const char *why);

#endif
