// SPDX-License-Identifier: LGPL-2.1-or-later
/* /proc/PID readers.  Parsers take text so unit tests can feed fixtures. */
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "proc.h"
#include "procfs.h"
#include "util.h"

int qj_proc_stat_parse(const char *text, struct qj_proc_stat *ret)
{
	const char *open = strchr(text, '('), *close = strrchr(text, ')');
	struct qj_proc_stat st = {};
	size_t len;
	int n;

	if (!open || !close || close < open)
		return -EINVAL;
	len = (size_t)(close - open - 1);
	if (len >= sizeof(st.comm))
		len = sizeof(st.comm) - 1;
	memcpy(st.comm, open + 1, len);
	/* After "(comm) ": 3 state, 4 ppid, 9 flags, 14-17 times, 20 threads, 22 start. */
	n = sscanf(close + 2,
		   "%c %d %*d %*d %*d %*d %u %*u %*u %*u %*u %" SCNu64 " %" SCNu64 " %" SCNu64
		   " %" SCNu64 " %*d %*d %u %*d %" SCNu64,
		   &st.state, &st.ppid, &st.flags, &st.utime, &st.stime, &st.cutime, &st.cstime,
		   &st.num_threads, &st.start_time);
	if (n != 9)
		return -EINVAL;
	*ret = st;
	return 0;
}

static int read_proc(pid_t pid, const char *what, char **ret)
{
	char path[QJ_PROCFS_PATH_MAX];
	int r;

	qj_procfs_path(path, sizeof(path), "%d/%s", pid, what);
	r = qj_read_record_file(path, ret);
	return r == -ENOENT ? -ESRCH : r;
}

int qj_proc_stat_read_path(const char *rel, struct qj_proc_stat *ret)
{
	_cleanup_free_ char *s = NULL;
	char path[QJ_PROCFS_PATH_MAX];
	int r;

	qj_procfs_path(path, sizeof(path), "%s/stat", rel);
	r = qj_read_record_file(path, &s);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	return qj_proc_stat_parse(s, ret);
}

int qj_proc_stat_read(pid_t pid, struct qj_proc_stat *ret)
{
	_cleanup_free_ char *s = NULL;
	int r = read_proc(pid, "stat", &s);

	return r < 0 ? r : qj_proc_stat_parse(s, ret);
}

static int hex_field(const char *text, const char *key, uint64_t *ret)
{
	const char *p = strstr(text, key);

	if (!p)
		return -EINVAL;
	*ret = strtoull(p + strlen(key), NULL, 16);
	return 0;
}

int qj_proc_status_parse(const char *text, struct qj_proc_status *ret)
{
	struct qj_proc_status s = {};
	const char *uid = strstr(text, "\nUid:");
	const char *vol = strstr(text, "\nvoluntary_ctxt_switches:");
	const char *nonvol = strstr(text, "\nnonvoluntary_ctxt_switches:");

	if (!uid || hex_field(text, "\nSigCgt:", &s.sigcgt) < 0 ||
	    hex_field(text, "\nSigPnd:", &s.sigpnd) < 0 ||
	    hex_field(text, "\nShdPnd:", &s.shdpnd) < 0)
		return -EINVAL;
	if (sscanf(uid + 5, "%u %u %u %u", &s.uids[0], &s.uids[1], &s.uids[2], &s.uids[3]) != 4)
		return -EINVAL;
	s.uid = s.uids[0];
	if (nonvol)
		s.nonvoluntary_switches =
			strtoull(nonvol + strlen("\nnonvoluntary_ctxt_switches:"), NULL, 10);
	if (vol)
		s.voluntary_switches =
			strtoull(vol + strlen("\nvoluntary_ctxt_switches:"), NULL, 10);
	*ret = s;
	return 0;
}

int qj_proc_status_read(pid_t pid, struct qj_proc_status *ret)
{
	_cleanup_free_ char *s = NULL;
	int r = read_proc(pid, "status", &s);

	return r < 0 ? r : qj_proc_status_parse(s, ret);
}

int qj_proc_schedstat_parse(const char *text, uint64_t *ret_cpu_ns, uint64_t *ret_wait_ns,
			    uint64_t *ret_slices)
{
	uint64_t cpu, wait, slices;

	if (sscanf(text, "%" SCNu64 " %" SCNu64 " %" SCNu64, &cpu, &wait, &slices) != 3)
		return -EINVAL;
	*ret_cpu_ns = cpu;
	*ret_wait_ns = wait;
	*ret_slices = slices;
	return 0;
}

int qj_proc_exe(pid_t pid, char **ret)
{
	char path[QJ_PROCFS_PATH_MAX], buf[4096];
	ssize_t n;

	qj_procfs_path(path, sizeof(path), "%d/exe", pid);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n < 0) {
		if (errno == ENOENT) {
			/* Kernel threads have no exe; a gone process has no directory. */
			qj_procfs_path(path, sizeof(path), "%d", pid);
			if (access(path, F_OK) < 0)
				return -ESRCH;
			n = 0;
		} else {
			return negative_errno();
		}
	}
	buf[n] = 0;
	*ret = strdup(buf);
	return *ret ? 0 : -ENOMEM;
}

int qj_proc_timerslack_get(pid_t tid, uint64_t *ret)
{
	_cleanup_free_ char *s = NULL;
	char path[QJ_PROCFS_PATH_MAX];
	int r;

	qj_procfs_path(path, sizeof(path), "%d/timerslack_ns", tid);
	r = qj_read_record_file(path, &s);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	*ret = strtoull(s, NULL, 10);
	return 0;
}

int qj_proc_timerslack_set(pid_t tid, uint64_t ns)
{
	char path[QJ_PROCFS_PATH_MAX], buf[32];
	int r;

	qj_procfs_path(path, sizeof(path), "%d/timerslack_ns", tid);
	snprintf(buf, sizeof(buf), "%" PRIu64, ns);
	r = qj_write_file(path, buf);
	return r == -ENOENT ? -ESRCH : r;
}

/*
 * Counts @pid's live threads, those stopped, those in 'D' (optional), and
 * whether one is runnable.
 */
static int threads_count(pid_t pid, size_t *ret_live, size_t *ret_stopped, bool *ret_runnable,
			 size_t *ret_uninterruptible)
{
	_cleanup_free_ pid_t *tids = NULL;
	size_t n = 0, live = 0, stopped = 0, uninterruptible = 0;
	bool runnable = false;
	int r;

	r = qj_proc_tids(pid, &tids, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		struct qj_proc_stat st;
		char rel[64];

		snprintf(rel, sizeof(rel), "%d/task/%d", pid, tids[i]);
		r = qj_proc_stat_read_path(rel, &st);
		if (r == -ESRCH || r == -ENOENT)
			continue; /* exited meanwhile */
		if (r < 0)
			return r;
		if (st.state == 'Z' || st.state == 'X')
			continue;
		live++;
		stopped += st.state == 'T' || st.state == 't';
		uninterruptible += st.state == 'D';
		runnable |= st.state == 'R';
	}
	*ret_live = live;
	*ret_stopped = stopped;
	*ret_runnable = runnable;
	if (ret_uninterruptible)
		*ret_uninterruptible = uninterruptible;
	return 0;
}

int qj_proc_threads_state(pid_t pid, char *ret)
{
	size_t live, stopped;
	bool runnable;
	int r;

	r = threads_count(pid, &live, &stopped, &runnable, NULL);
	if (r < 0)
		return r;
	*ret = live == 0 ? 'Z' : stopped == live ? 'T' : runnable ? 'R' : 'S';
	return 0;
}

int qj_proc_some_thread_stopped(pid_t pid)
{
	size_t live, stopped;
	bool runnable;
	int r;

	r = threads_count(pid, &live, &stopped, &runnable, NULL);
	if (r < 0)
		return r;
	return stopped > 0;
}

int qj_proc_stop_under_way(pid_t pid)
{
	size_t live, stopped, uninterruptible;
	bool runnable;
	int r;

	r = threads_count(pid, &live, &stopped, &runnable, &uninterruptible);
	if (r < 0)
		return r;
	return stopped > 0 && stopped + uninterruptible < live;
}

int qj_proc_timerslack_set_if_same(pid_t tid, uint64_t start_time, uint64_t ns)
{
	_cleanup_close_ int fd = -EBADF;
	struct qj_proc_stat st;
	char path[QJ_PROCFS_PATH_MAX], buf[32];
	size_t len;
	int r;

	qj_procfs_path(path, sizeof(path), "%d/timerslack_ns", tid);
	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : negative_errno();
	/* Checked after open: the fd pins the task the check sees. */
	r = qj_proc_stat_read(tid, &st);
	if (r < 0)
		return r;
	if (st.start_time != start_time)
		return -ESRCH;
	len = (size_t)snprintf(buf, sizeof(buf), "%" PRIu64, ns);
	if (write(fd, buf, len) != (ssize_t)len)
		return errno == ESRCH ? -ESRCH : negative_errno();
	return 0;
}

int qj_proc_tids(pid_t pid, pid_t **ret, size_t *ret_n)
{
	char path[QJ_PROCFS_PATH_MAX];
	struct dirent *de;
	pid_t *v = NULL;
	size_t n = 0;
	DIR *d;

	qj_procfs_path(path, sizeof(path), "%d/task", pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : negative_errno();
	while ((de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		pid_t *nv;

		if (tid <= 0)
			continue;
		nv = realloc(v, (n + 1) * sizeof(*v));
		if (!nv) {
			free(v);
			closedir(d);
			return -ENOMEM;
		}
		v = nv;
		v[n++] = tid;
	}
	closedir(d);
	*ret = v;
	*ret_n = n;
	return 0;
}

bool qj_pidfd_exited(int pidfd)
{
	struct pollfd pfd = { .fd = pidfd, .events = POLLIN };

	return poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLIN | POLLHUP));
}
