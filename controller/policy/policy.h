/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The policy language, version 1: YAML text in, struct qj_policy or a list of
 * FILE:LINE:COL diagnostics out.  Pure: no syscalls beyond reading the file in
 * qj_policy_load().  The schema is documented in docs/qosjail.yaml.5.scd.
 */
#ifndef QJ_POLICY_H
#define QJ_POLICY_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "actions.h"

#define QJ_POLICY_MAX_BYTES (1024 * 1024)
#define QJ_POLICY_MAX_ALIASES 16
#define QJ_POLICY_MAX_RUNGS 8
/* Upper bound of limits.clients and limits.clients_per_uid. */
#define QJ_POLICY_MAX_CLIENTS 65536
/* Upper bound of limits.holds_per_uid and limits.holds_per_connection. */
#define QJ_POLICY_MAX_HOLDS 4096
#define QJ_POLICY_MAX_DIAGS 100
/* Longest name of an app, rung or group, in bytes; every buffer that carries one is
 * QJ_POLICY_NAME_MAX + 1 bytes. */
#define QJ_POLICY_NAME_MAX 64

enum qj_backend {
	QJ_BACKEND_AUTO,
	QJ_BACKEND_QOS,
	QJ_BACKEND_WAKEUP_COUNT,
	QJ_BACKEND_MEM,
	QJ_BACKEND_FREEZE,
	QJ_BACKEND_DRY_RUN,
	_QJ_BACKEND_MAX,
	_QJ_BACKEND_INVALID = -EINVAL,
};

enum qj_trust {
	QJ_TRUST_JAILED,
	QJ_TRUST_TRUSTED,
	_QJ_TRUST_MAX,
	_QJ_TRUST_INVALID = -EINVAL,
};

struct qj_rung {
	char *name; /* unique within the ladder; default derived from the action */
	enum qj_action action;
	uint64_t grace_usec; /* time the task gets to block before the next rung */
};

struct qj_principals {
	uid_t *uids;
	size_t n_uids;
	char **groups; /* group names, resolved at check time by the daemon */
	size_t n_groups;
	bool anyone; /* "*" */
	gid_t *gids; /* groups resolved by qj_policy_resolve_groups(); empty until then */
	size_t n_gids;
};

/* A closed range of user ids. */
struct qj_uid_range {
	uid_t first, last;
};

/* access.place_as: the uids @launcher starts apps as, whose processes it may place. */
struct qj_place_as {
	uid_t launcher;
	struct qj_uid_range *uids;
	size_t n_uids;
};

struct qj_app {
	char *name;
	/* Match rules; all given rules must match.  NULL/unset means "any". */
	char *match_exe; /* fnmatch(3) glob on /proc/PID/exe */
	char *match_cmdline; /* fnmatch(3) glob on the space-joined cmdline */
	bool has_match_uid;
	uid_t match_uid;
	enum qj_trust trust;
	bool exempt; /* jailed but never escalated against */
	bool notify; /* consents to the notify rung (SIGXCPU): catching SIGXCPU is not consent */
	int start_rung; /* index into the ladder; default 0 */
	int max_rung; /* index into the ladder; default last rung */
	unsigned hold_max; /* concurrent holds an app may own; 0 = none allowed */
	uint64_t hold_max_timeout_usec; /* 0 = unlimited */
};

struct qj_policy {
	char *source; /* file name it came from */

	/* suspend: */
	enum qj_backend backend;
	char *sysfs_root; /* "/sys"; tests point it at a fake tree */
	char *wakeup_state; /* what wakeup-count writes: "mem" or "freeze" */
	uint64_t idle_delay_usec;
	uint64_t retry_initial_usec;
	uint64_t retry_max_usec;
	uint64_t dry_run_length_usec; /* simulated suspend length on dry-run */
	uint64_t max_delay_usec; /* longest a cycle waits for delay holds; 0 = none taken */
	bool dark_wake_keep; /* dark_wake: keep-quiesced (true) or restore (false) */
	uint64_t dark_wake_max_usec; /* holds this long restore a kept jail; 0: any hold */

	/* jail: */
	char *cgroup_path; /* cgroup2 directory of the jail */
	char *cpu_cgroup_path; /* cgroup v1 cpu directory, used when cpu is v1-only */
	bool cpu_idle;
	uint64_t timer_slack_nsec;
	double busy_threshold; /* fraction of one CPU, (0, 1] */
	uint64_t sample_window_usec;

	/* escalation: */
	struct qj_rung rungs[QJ_POLICY_MAX_RUNGS];
	size_t n_rungs;
	unsigned max_strikes; /* 0 = strikes never change the start rung */
	int strike_rung; /* rung an app over max_strikes starts at */

	/* apps: */
	struct qj_app *apps;
	size_t n_apps;

	/* access: */
	struct qj_principals access_place;
	struct qj_principals access_reload;
	struct qj_principals access_suspend;
	struct qj_principals access_logs;
	struct qj_principals access_hold;
	struct qj_principals access_delay; /* who may take delay holds */
	struct qj_place_as *place_as;
	size_t n_place_as;

	/* logind: */
	bool logind_bridge; /* follow logind's sleep inhibitors on the system bus */
	struct qj_principals logind_inhibitors; /* whose block inhibitors count as holds */
	uint64_t logind_absent_max_usec; /* logind away: its inhibitors held at most this long */
	bool logind_idle_hint; /* an active local session that is not idle holds (logind-idle.c) */

	/* limits: (root is exempt from each) */
	unsigned max_clients; /* connections at once, over all uids */
	unsigned max_clients_per_uid;
	unsigned max_holds_per_uid; /* live holds of one uid over all its connections */
	unsigned max_holds_per_conn;

	/* log: */
	char *log_path;
	uint64_t log_max_bytes;
	unsigned log_keep;
};

/* One error: "FILE:LINE:COL: PATH: MESSAGE" (line and column 1-based). */
struct qj_diag {
	unsigned line;
	unsigned col;
	char *path; /* key path, e.g. "apps[2].match.exe"; may be "" for document-level */
	char *message;
};

struct qj_diags {
	char *file;
	struct qj_diag *v;
	size_t n;
};

void qj_diags_done(struct qj_diags *d);
/* Prints every diagnostic as "FILE:LINE:COL: PATH: MESSAGE\n". */
void qj_diags_print(const struct qj_diags *d, FILE *f);

/*
 * Parses @len bytes of @text; @filename is used in diagnostics only.
 * Returns 0 and sets *ret, or -EINVAL with every problem found in @diags
 * (then *ret is untouched), or -ENOMEM.  @diags starts zeroed ({}); diagnostics are
 * appended sorted by position, at most QJ_POLICY_MAX_DIAGS (the last then says how many
 * more there were).  Release it with qj_diags_done() either way.
 */
int qj_policy_parse(const char *filename, const char *text, size_t len, struct qj_diags *diags,
		    struct qj_policy **ret);

/*
 * Reads @path and parses it.  I/O errors are -errno (-EISDIR for a directory); a file over
 * QJ_POLICY_MAX_BYTES is -EINVAL with a diagnostic, like any other invalid policy.
 */
int qj_policy_load(const char *path, struct qj_diags *diags, struct qj_policy **ret);

/* The built-in defaults, as if parsed from "version: 1". */
int qj_policy_new_default(struct qj_policy **ret);

struct qj_policy *qj_policy_free(struct qj_policy *p);

/* The effective policy (defaults filled in) as pretty JSON, the output of `check --dump`. */
int qj_policy_dump_json(const struct qj_policy *p, FILE *f);

/*
 * First app (in policy order) whose match rules all accept the process; NULL when none does.
 * Apps without any match rule are skipped: launchers place them by name (qj_policy_find_app).
 * A NULL @exe or @cmdline fails the corresponding rule.
 */
const struct qj_app *qj_policy_match(const struct qj_policy *p, const char *exe,
				     const char *cmdline, uid_t uid);
/*
 * The match of a process whose cmdline is not known (yet): reading a cmdline can wait on
 * the process's own locks, so it is read only when it decides.  Sets *@ret_needs_cmdline
 * when the cmdline chooses between apps of which at least one is jailed; then returns
 * the first jailed app among those it may match (where a process whose cmdline cannot be
 * read goes: fail closed).  Otherwise the cmdline cannot make the process jailed or
 * move it to another jailed app: returns the app it matches when no cmdline rule
 * accepts it (NULL when none).
 */
const struct qj_app *qj_policy_match_without_cmdline(const struct qj_policy *p, const char *exe,
						     uid_t uid, bool *ret_needs_cmdline);
const struct qj_app *qj_policy_find_app(const struct qj_policy *p, const char *name);
/*
 * The longest a quiesce may take before it ends in a logged failure: every
 * rung needs its grace and a sample window to judge it, the per-task ladder
 * and then the group ladder of an app whose work hops between tasks may both
 * run, plus a first window for each.  2 * (window + sum(grace + window)).
 */
uint64_t qj_policy_quiesce_bound_usec(const struct qj_policy *p);

/* True when @uid or one of @gids (the peer's groups) is allowed.  Groups count only once resolved. */
bool qj_principals_allow(const struct qj_principals *pr, uid_t uid, const gid_t *gids,
			 size_t n_gids);

/*
 * Whether a non-root caller @launcher may place a process of @uid that is not its own:
 * access.place_as lists @uid for it.  Never true for uid 0.
 */
bool qj_policy_may_place_as(const struct qj_policy *p, uid_t launcher, uid_t uid);

/*
 * Resolves the group names of every access list into gids with @lookup (the daemon passes a
 * getgrnam_r() wrapper; the module stays pure).  @lookup returns 0 or -errno; names it cannot
 * resolve are skipped.  Returns the number of unresolved names, or -ENOMEM.
 */
int qj_policy_resolve_groups(struct qj_policy *p,
			     int (*lookup)(const char *group, gid_t *ret_gid, void *userdata),
			     void *userdata);

const char *qj_backend_to_string(enum qj_backend b);
enum qj_backend qj_backend_from_string(const char *s);

const char *qj_trust_to_string(enum qj_trust t);
enum qj_trust qj_trust_from_string(const char *s);

/* "250ms", "5s", "2m", "1h" -> microseconds.  Returns 0 or -EINVAL/-ERANGE. */
int qj_parse_duration(const char *s, uint64_t *ret_usec);
/* "4096", "64K", "10M", "1G" (powers of 1024) -> bytes.  Returns 0 or -EINVAL/-ERANGE. */
int qj_parse_size(const char *s, uint64_t *ret_bytes);

#endif
