/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The jail's cgroups.  cgroup2 holds membership and the v2-only knobs
 * (cgroup.freeze, cgroup.kill, cgroup.events, cpu.stat) as raw files; where
 * cpu is only a v1 controller (hybrid layout) a matching v1 cpu group carries
 * cpu.idle, through libcgroup.  The v2 root's subtree_control is never written.
 */
#ifndef QJ_CGROUP_H
#define QJ_CGROUP_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fileio.h" /* qj_read_file(), qj_write_file(): the cgroup files are read with them */

enum qj_cg_layout {
	QJ_CG_UNIFIED, /* cgroup2 only */
	QJ_CG_HYBRID, /* cgroup2 plus v1 controllers */
	QJ_CG_LEGACY, /* v1 only: no jail possible (no cgroup.freeze, no cgroup.events) */
	_QJ_CG_LAYOUT_MAX,
	_QJ_CG_LAYOUT_INVALID = -EINVAL,
};

struct qj_cgroup;

/* Reads /proc/self/mountinfo; *ret_v2_mount (may be NULL) gets the cgroup2 mount point. */
int qj_cgroup_detect(enum qj_cg_layout *ret, char **ret_v2_mount);
const char *qj_cg_layout_to_string(enum qj_cg_layout l);

/* Creates the jail directories (v2 @path, v1 @cpu_path when cpu is v1-only; may be NULL). */
int qj_cgroup_new(const char *path, const char *cpu_path, struct qj_cgroup **ret);
struct qj_cgroup *qj_cgroup_free(struct qj_cgroup *c);

/* Creates @app's group(s); 0 when they exist already. */
int qj_cgroup_app_create(struct qj_cgroup *c, const char *app);
/* Removes @app's groups (must be empty): -EBUSY when populated. */
int qj_cgroup_app_remove(struct qj_cgroup *c, const char *app);
/* Removes the jail's own directories (every app group must be gone). */
int qj_cgroup_remove(struct qj_cgroup *c);
/* Newly allocated "<path>/<app>". */
char *qj_cgroup_app_path(const struct qj_cgroup *c, const char *app);
/* Names of the app groups present under the jail (allocated, NULL-terminated). */
int qj_cgroup_list_apps(const struct qj_cgroup *c, char ***ret);
void qj_strv_free(char **v);

/* Moves every thread of @pid into @app (v2 cgroup.procs, v1 cpu tasks per thread). */
int qj_cgroup_place(struct qj_cgroup *c, const char *app, pid_t pid);
/* Like qj_cgroup_place but only the v1 cpu side (for tasks the kernel put in v2 already). */
int qj_cgroup_place_v1(struct qj_cgroup *c, const char *app, pid_t pid);
/* 1 and the app (allocated) when @pid is in the jail, 0 when not. */
int qj_cgroup_app_of_pid(const struct qj_cgroup *c, pid_t pid, char **ret_app);
/*
 * The threads in @app's v1 cpu group (hybrid layout): 1 and its "tasks" file, or 0 without
 * v1 groups (every task is in).  One read for 10,000 tasks tracked in one step: tasks that
 * entered the v2 group by clone3(CLONE_INTO_CGROUP) or a write to cgroup.procs did not
 * enter the v1 one.
 */
int qj_cgroup_app_v1_tids(const struct qj_cgroup *c, const char *app, pid_t **ret, size_t *ret_n);

/* Reads a cgroup.procs-like file of decimal ids (reads loop: 4096 bytes per read). */
int qj_cgroup_read_pids(const char *file, pid_t **ret, size_t *ret_n);
/* Every process of @app (NULL: of every app group). */
int qj_cgroup_app_pids(const struct qj_cgroup *c, const char *app, pid_t **ret, size_t *ret_n);

int qj_cgroup_freeze(struct qj_cgroup *c, const char *app, bool freeze);
/* cgroup.freeze as written (1/0) */
int qj_cgroup_freeze_requested(const struct qj_cgroup *c, const char *app);
/* Parses "KEY VALUE" from cgroup.events: 1/0, or -errno.  @key: "frozen", "populated". */
int qj_cgroup_event(const struct qj_cgroup *c, const char *app, const char *key);
int qj_cgroup_kill(struct qj_cgroup *c, const char *app);
/* "some" total of cpu.pressure: time a task of the group was runnable but waiting. */
int qj_cgroup_cpu_stall_usec(const struct qj_cgroup *c, const char *app, uint64_t *ret);
/* usage_usec of cpu.stat (@app NULL: the whole jail). */
int qj_cgroup_usage_usec(const struct qj_cgroup *c, const char *app, uint64_t *ret);

/*
 * Quiesce QoS: the jail's CPU class at idle (cpu.idle=1, or the lowest
 * weight/shares where cpu.idle is missing).  Remembers the old value;
 * qj_cgroup_set_idle(c, false) restores it exactly.  Returns 1 when applied, 0
 * when no cpu knob is available, or -errno.
 */
int qj_cgroup_set_idle(struct qj_cgroup *c, bool idle);
/* Whether a cpu knob (cpu.idle, cpu.weight, v1 cpu.idle or cpu.shares) was found. */
bool qj_cgroup_has_idle_knob(const struct qj_cgroup *c);
/* The saved knob for restart safety: name ("cpu.idle"...) and old value, or -ENODATA. */
int qj_cgroup_idle_saved(const struct qj_cgroup *c, const char **ret_knob, int64_t *ret_old);
/* Restores a knob value saved by a previous instance. */
int qj_cgroup_idle_restore(struct qj_cgroup *c, const char *knob, int64_t old);

#endif
