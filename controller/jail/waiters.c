// SPDX-License-Identifier: LGPL-2.1-or-later
/* Trusted work waiting on the jail: locks and FUSE (see waiters.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "engine.h"
#include "proc.h"
#include "util.h"
#include "waiters.h"

#include "jail-internal.h"

/* A jailed process with more descriptors is scanned only this far for /dev/fuse. */
#define MAX_FDS_SCANNED 4096
/* Threads whose wchan one listing reads at most (its cost on a machine of many). */
#define MAX_THREADS_SCANNED 4096
/* Waits listed at most (status stays small whatever a jail holds up). */
#define MAX_WAITS 64

const char *qj_wait_kind_to_string(enum qj_wait_kind k)
{
	return k == QJ_WAIT_LOCK ? "lock" : "fuse";
}

int qj_locks_parse(const char *text,
		   int (*cb)(pid_t waiter, pid_t holder, const char *lock, void *userdata),
		   void *userdata)
{
	long long holder_id = -1;
	pid_t holder = 0;
	char lock[96] = "";
	int r;

	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n'), *p;
		char type[16], adv[16], rw[16], dev[48];
		bool blocked = false;
		long long id;
		char *end;
		int pid;

		id = strtoll(line, &end, 10);
		p = end;
		if (p == line || *p != ':')
			goto next;
		for (p++; *p == ' '; p++)
			;
		if (strncmp(p, "->", 2) == 0) {
			blocked = true;
			p += 2;
		}
		if (sscanf(p, "%15s %15s %15s %d %47s", type, adv, rw, &pid, dev) != 5)
			goto next;
		if (!blocked) {
			holder_id = id;
			holder = pid;
			snprintf(lock, sizeof(lock), "%s %s lock on %s", type, rw, dev);
		} else if (id == holder_id && holder > 0 && pid > 0) {
			r = cb(pid, holder, lock, userdata);
			if (r < 0)
				return r;
		}
next:
		line = nl ? nl + 1 : NULL;
	}
	return 0;
}

static void comm_of(pid_t pid, char *buf, size_t size)
{
	struct qj_proc_stat st;

	snprintf(buf, size, "%s", qj_proc_stat_read(pid, &st) == 0 ? st.comm : "");
}

struct collect {
	struct qj_engine *e;
	pid_t only;
	struct qj_wait *v;
	size_t n;
};

/* 1 and @app when @pid is jailed, 0 when not (or gone). */
static int jailed(struct qj_engine *e, pid_t pid, char *app, size_t size)
{
	_cleanup_free_ char *name = NULL;
	int r = qj_cgroup_app_of_pid(e->cg, pid, &name);

	if (r > 0 && app)
		snprintf(app, size, "%s", name);
	return r > 0;
}

static int add(struct collect *c, const struct qj_wait *w)
{
	struct qj_wait *nv;

	if (c->n >= MAX_WAITS)
		return 0;
	nv = realloc(c->v, (c->n + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	c->v = nv;
	c->v[c->n] = *w;
	comm_of(w->waiter, c->v[c->n].waiter_comm, sizeof(c->v[c->n].waiter_comm));
	comm_of(w->holder, c->v[c->n].holder_comm, sizeof(c->v[c->n].holder_comm));
	c->n++;
	return 0;
}

static int on_lock(pid_t waiter, pid_t holder, const char *lock, void *userdata)
{
	struct collect *c = userdata;
	struct qj_wait w = { .kind = QJ_WAIT_LOCK, .waiter = waiter, .holder = holder };

	if (c->only > 0 && waiter != c->only)
		return 0;
	if (!jailed(c->e, holder, w.app, sizeof(w.app)) || jailed(c->e, waiter, NULL, 0))
		return 0;
	snprintf(w.what, sizeof(w.what), "%s", lock);
	return add(c, &w);
}

/* 1 when @pid has /dev/fuse open (a FUSE server), 0 when not. */
static int serves_fuse(pid_t pid)
{
	char path[64], link[32];
	struct dirent *de;
	int n = 0, found = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	d = opendir(path);
	if (!d)
		return 0;
	while (!found && n++ < MAX_FDS_SCANNED && (de = readdir(d))) {
		char fd_path[320];
		ssize_t k;

		if (de->d_name[0] == '.')
			continue;
		snprintf(fd_path, sizeof(fd_path), "%s/%s", path, de->d_name);
		/* readlink of an fd link names the file: no call into its file system. */
		k = readlink(fd_path, link, sizeof(link) - 1);
		if (k > 0) {
			link[k] = '\0';
			found = strcmp(link, "/dev/fuse") == 0;
		}
	}
	closedir(d);
	return found;
}

/* The first jailed FUSE server, 0 when the jail has none. */
static pid_t jailed_fuse_server(struct qj_engine *e)
{
	_cleanup_free_ pid_t *pids = NULL;
	size_t n = 0;

	if (qj_cgroup_app_pids(e->cg, NULL, &pids, &n) < 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (serves_fuse(pids[i]))
			return pids[i];
	return 0;
}

/* 1 when a thread of @pid waits for a FUSE request's answer (its wchan); uses @budget. */
static int in_fuse_wait(pid_t pid, size_t *budget)
{
	_cleanup_free_ pid_t *tids = NULL;
	size_t n = 0;

	if (qj_proc_tids(pid, &tids, &n) < 0)
		return 0;
	for (size_t i = 0; i<n && * budget> 0; i++, (*budget)--) {
		char path[96], wchan[64];
		ssize_t k;
		int fd;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/wchan", pid, tids[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		k = read(fd, wchan, sizeof(wchan) - 1);
		close(fd);
		if (k <= 0)
			continue;
		wchan[k] = '\0';
		if (strcmp(wchan, "request_wait_answer") == 0 || strncmp(wchan, "fuse_", 5) == 0)
			return 1;
	}
	return 0;
}

/* A trusted reader waits on a jailed server only while the jail is held (stopped). */
static bool held(struct qj_engine *e, pid_t server)
{
	struct qj_proc_stat st;

	return e->quiescing || (qj_proc_stat_read(server, &st) == 0 && st.state == 'T');
}

static int fuse_waiters(struct collect *c)
{
	struct qj_wait w = { .kind = QJ_WAIT_FUSE };
	size_t budget = MAX_THREADS_SCANNED;
	struct dirent *de;
	DIR *d;
	int r = 0;

	w.holder = jailed_fuse_server(c->e);
	if (w.holder <= 0 || !jailed(c->e, w.holder, w.app, sizeof(w.app)) || !held(c->e, w.holder))
		return 0;
	snprintf(w.what, sizeof(w.what), "a FUSE request (the jail serves FUSE)");
	if (c->only > 0) {
		if (in_fuse_wait(c->only, &budget) && !jailed(c->e, c->only, NULL, 0)) {
			w.waiter = c->only;
			r = add(c, &w);
		}
		return r;
	}
	d = opendir("/proc");
	if (!d)
		return negative_errno();
	while (r >= 0 && budget > 0 && (de = readdir(d))) {
		pid_t pid = (pid_t)atoi(de->d_name);

		if (pid <= 0 || !in_fuse_wait(pid, &budget) || jailed(c->e, pid, NULL, 0))
			continue;
		w.waiter = pid;
		r = add(c, &w);
	}
	closedir(d);
	return r;
}

int qj_engine_waiters(struct qj_engine *e, pid_t only, struct qj_wait **ret, size_t *ret_n)
{
	struct collect c = { .e = e, .only = only };
	_cleanup_free_ char *locks = NULL;
	int r;

	r = qj_read_file("/proc/locks", &locks);
	if (r >= 0)
		r = qj_locks_parse(locks, on_lock, &c);
	if (r >= 0)
		r = fuse_waiters(&c);
	if (r < 0) {
		free(c.v);
		return r;
	}
	*ret = c.v;
	*ret_n = c.n;
	return 0;
}
