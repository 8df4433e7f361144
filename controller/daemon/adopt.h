/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* spawn with "child": placing a launcher's waiting child, named by its pidfd (issue 28). */
#ifndef QJ_ADOPT_H
#define QJ_ADOPT_H

#include <stddef.h>
#include <sys/types.h>

struct qj_engine;
struct qj_policy;

/* The caller, as the IPC server identified it at connect. */
struct qj_adopt_caller {
	pid_t pid;
	int pidfd; /* negative when none: refused */
	uid_t uid;
};

/*
 * Moves the process @pidfd names into @app's cgroup when it is the caller's own child
 * (its parent is the caller, which is still alive), a process and not a thread, and
 * every uid of it is the caller's (root: any; access.place_as: those listed).  Checked
 * with the pidfd alive after each read, so a pid that changed hands is never acted on.
 * On success *ret_pid and @cgroup (the cgroup2 path in /proc/PID/cgroup's form, which
 * the child compares with its own before exec).  Negative errno and @err otherwise:
 * -EBADF (no pidfd), -ESRCH (exited), -EPERM (not the caller's own child), -EINVAL (a
 * thread), -ENOENT (no such jailed app), -EIO (not in the cgroup after the move).
 */
int qj_adopt_child(struct qj_engine *e, const struct qj_policy *p, const struct qj_adopt_caller *c,
		   const char *app, int pidfd, pid_t *ret_pid, char *cgroup, size_t cgroup_len,
		   char *err, size_t err_len);

#endif
