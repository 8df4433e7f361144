// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * spawn with "child": a launcher that may not clone3() into the jail (any uid but root:
 * CLONE_INTO_CGROUP needs write access to the common ancestor's cgroup.procs) forks a
 * child that waits before exec, and passes its pidfd.  The daemon checks that the pidfd
 * names the caller's own waiting child, moves it, and says which cgroup it is in; the
 * child compares that with its own /proc/self/cgroup before it execs.  Issue 28.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <unistd.h>

#include "adopt.h"
#include "cgroup.h"
#include "engine.h"
#include "log.h"
#include "policy.h"
#include "proc.h"
#include "util.h"

/* The fields of /proc/PID/status the checks need. */
struct adopt_status {
	pid_t tgid, ppid;
	uid_t uids[4];
};

static int status_field(const char *text, const char *key, long *ret)
{
	const char *p = strstr(text, key);

	if (!p)
		return -EINVAL;
	*ret = strtol(p + strlen(key), NULL, 10);
	return 0;
}

static int read_status(pid_t pid, struct adopt_status *ret)
{
	_cleanup_free_ char *s = NULL;
	char path[64];
	long tgid, ppid;
	int r;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	r = qj_read_file(path, &s);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	if (status_field(s, "\nTgid:", &tgid) < 0 || status_field(s, "\nPPid:", &ppid) < 0 ||
	    !strstr(s, "\nUid:"))
		return -EINVAL;
	if (sscanf(strstr(s, "\nUid:") + 5, "%u %u %u %u", &ret->uids[0], &ret->uids[1],
		   &ret->uids[2], &ret->uids[3]) != 4)
		return -EINVAL;
	ret->tgid = (pid_t)tgid;
	ret->ppid = (pid_t)ppid;
	return 0;
}

/*
 * The pid a pidfd names, from its fdinfo ("Pid:", -1 once reaped, 0 in another pid
 * namespace).  Only a pidfd passes: pidfd_send_signal() also takes /proc/PID directory
 * fds, whose fdinfo has no "Pid:" line.
 */
static int pidfd_pid(int pidfd, pid_t *ret)
{
	_cleanup_free_ char *s = NULL;
	char path[64];
	long pid;
	int r;

	if (pidfd_send_signal(pidfd, 0, NULL, 0) < 0)
		return errno == ESRCH ? -ESRCH : -EBADF;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	r = qj_read_file(path, &s);
	if (r < 0)
		return r;
	if (status_field(s, "\nPid:", &pid) < 0)
		return -EBADF;
	if (pid < 0)
		return -ESRCH;
	if (pid == 0)
		return -EPERM;
	*ret = (pid_t)pid;
	return 0;
}

/* Every uid of the child is the caller's (never root unless the caller is), or place_as. */
static bool uids_ok(const struct qj_policy *p, uid_t caller, const struct adopt_status *st)
{
	if (caller == 0)
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(st->uids); i++)
		if (!(st->uids[i] == caller && caller != 0) &&
		    !qj_policy_may_place_as(p, caller, st->uids[i]))
			return false;
	return true;
}

/* The "0::" line of /proc/PID/cgroup (the cgroup2 path), into @buf. */
static int v2_path(pid_t pid, char *buf, size_t size)
{
	_cleanup_free_ char *s = NULL;
	char path[64];
	int r;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	r = qj_read_file(path, &s);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	for (char *line = s, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (strncmp(line, "0::", 3) == 0) {
			if (strlen(line + 3) >= size)
				return -ENAMETOOLONG;
			strcpy(buf, line + 3);
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * Whether the process is on its way out: cgroup.procs accepts the pid of a task that
 * is exiting (PF_EXITING) and leaves it where it is, before its pidfd says it exited.
 */
static bool exiting(pid_t pid, int pidfd)
{
	struct qj_proc_stat st;

	return qj_pidfd_exited(pidfd) || qj_proc_stat_read(pid, &st) < 0 ||
	       (st.flags & QJ_PF_EXITING);
}

/* Who the pidfd names, and whether the caller may hand it over; *ret_pid on success. */
static int check_child(const struct qj_adopt_caller *c, const struct qj_policy *p, int pidfd,
		       pid_t *ret_pid, char *err, size_t err_len)
{
	struct adopt_status st;
	pid_t pid = 0;
	int r;

	r = pidfd_pid(pidfd, &pid);
	if (r < 0) {
		snprintf(err, err_len, "%s",
			 r == -ESRCH ? "the child has exited" :
			 r == -EPERM ? "the child is in another pid namespace" :
				       "the fd passed is not a pidfd");
		return r;
	}
	/* c->pid names the caller only while the caller's own pidfd says it is alive. */
	if (c->pidfd < 0 || qj_pidfd_exited(c->pidfd)) {
		snprintf(err, err_len, "the connecting process has exited");
		return -ESRCH;
	}
	r = read_status(pid, &st);
	if (r >= 0 && qj_pidfd_exited(pidfd))
		r = -ESRCH; /* what was read may have been another process at that pid */
	if (r < 0) {
		snprintf(err, err_len, "the child has exited");
		return r == -ESRCH ? r : -ESRCH;
	}
	if (st.tgid != pid) {
		snprintf(err, err_len, "pid %d is a thread, not a process", pid);
		return -EINVAL;
	}
	if (st.ppid != c->pid) {
		snprintf(err, err_len, "pid %d is not a child of the caller (pid %d)", pid, c->pid);
		return -EPERM;
	}
	if (!uids_ok(p, c->uid, &st)) {
		snprintf(err, err_len,
			 "pid %d runs as uid %u/%u: uid %u may hand over only its own", pid,
			 st.uids[0], st.uids[1], c->uid);
		return -EPERM;
	}
	*ret_pid = pid;
	return 0;
}

int qj_adopt_child(struct qj_engine *e, const struct qj_policy *p, const struct qj_adopt_caller *c,
		   const char *app, int pidfd, pid_t *ret_pid, char *cgroup, size_t cgroup_len,
		   char *err, size_t err_len)
{
	const char *in = NULL;
	pid_t pid = 0;
	int r;

	if (pidfd < 0) {
		snprintf(err, err_len,
			 "spawn with \"child\" needs the child's pidfd passed with it");
		return -EBADF;
	}
	r = check_child(c, p, pidfd, &pid, err, err_len);
	if (r < 0)
		return r;
	r = qj_engine_place(e, app, pid);
	/* Alive after the move: the pid still named the child when it was written. */
	if (r >= 0 && qj_pidfd_exited(pidfd)) {
		log_warning("Pid %d exited while being placed into %s for pid %d uid %u", pid, app,
			    c->pid, c->uid);
		r = -ESRCH;
	}
	if (r < 0) {
		snprintf(err, err_len,
			 r == -ENOENT ? "no app '%s' in the policy" :
			 r == -ESRCH  ? "cannot place the child into '%s': it has exited" :
					"cannot place the child into '%s'",
			 app);
		return r;
	}
	/* The daemon's own look at where the child is now, then the path the child compares. */
	r = qj_engine_app_of_pid(e, pid, &in);
	if (r >= 0 && (r == 0 || strcmp(in, app) != 0))
		r = -EIO;
	if (r >= 0)
		r = v2_path(pid, cgroup, cgroup_len);
	if (r >= 0 && qj_pidfd_exited(pidfd))
		r = -ESRCH; /* what was read may have been another process at that pid */
	/* An exiting task is not moved: gone is ESRCH, whatever the reads said. */
	if (r < 0 && exiting(pid, pidfd))
		r = -ESRCH;
	if (r == -ESRCH) {
		snprintf(err, err_len, "the child exited while being placed into '%s'", app);
		return r;
	}
	if (r < 0) {
		snprintf(err, err_len, "the child is not in the cgroup of '%s' after the move: %s",
			 app, strerror(-r));
		return r;
	}
	*ret_pid = pid;
	return 0;
}
