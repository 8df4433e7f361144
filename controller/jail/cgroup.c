// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Jail cgroups.  libcgroup 2.0 serves the v1 cpu controller here (cgroup-v1.c); it
 * must not touch cgroup2: it reaches v2 only through the hugetlb controller and
 * creating a v2 group through it writes "+hugetlb" into the v2 root's
 * subtree_control (docs/platform.md).  So v2 is raw files, here.
 */
#include <dirent.h>
#include <fcntl.h>
#include <libcgroup.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup-v1.h"
#include "cgroup.h"
#include "fileio.h"
#include "log.h"
#include "procfs.h"
#include "util.h"

enum idle_knob {
	KNOB_NONE,
	KNOB_V2_IDLE,
	KNOB_V2_WEIGHT,
	KNOB_V1_IDLE,
	KNOB_V1_SHARES,
	_KNOB_MAX,
};

struct qj_cgroup {
	enum qj_cg_layout layout;
	char *path; /* v2 jail directory */
	char *v2_mount;
	char *v2_rel; /* path relative to the v2 mount, starting with '/' */
	struct qj_cgv1 v1;
	enum idle_knob knob;
	bool idle_applied;
	int64_t idle_old;
};

static const char *const knob_names[_KNOB_MAX] = {
	[KNOB_NONE] = "none",
	[KNOB_V2_IDLE] = "v2:cpu.idle",
	[KNOB_V2_WEIGHT] = "v2:cpu.weight",
	[KNOB_V1_IDLE] = "v1:cpu.idle",
	[KNOB_V1_SHARES] = "v1:cpu.shares",
};

static bool file_exists(const char *dir, const char *name)
{
	_cleanup_free_ char *p = qj_cg_join(dir, name);

	return p && access(p, F_OK) == 0;
}

const char *qj_cg_layout_to_string(enum qj_cg_layout l)
{
	static const char *const names[_QJ_CG_LAYOUT_MAX] = {
		[QJ_CG_UNIFIED] = "unified",
		[QJ_CG_HYBRID] = "hybrid",
		[QJ_CG_LEGACY] = "legacy",
	};

	return l >= 0 && l < _QJ_CG_LAYOUT_MAX ? names[l] : NULL;
}

int qj_cgroup_detect(enum qj_cg_layout *ret, char **ret_v2_mount)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *line = NULL;
	_cleanup_free_ char *v2 = NULL;
	size_t cap = 0;
	bool v1 = false;
	char path[QJ_PROCFS_PATH_MAX];

	if (qj_procfs_path(path, sizeof(path), "self/mountinfo") < 0)
		return -ENAMETOOLONG;
	f = fopen(path, "re");
	if (!f)
		return negative_errno();
	while (getline(&line, &cap, f) > 0) {
		char mnt[512], fstype[64];
		const char *sep = strstr(line, " - ");

		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS... - FSTYPE SOURCE SUPEROPTS */
		if (!sep || sscanf(line, "%*s %*s %*s %*s %511s", mnt) != 1 ||
		    sscanf(sep + 3, "%63s", fstype) != 1)
			continue;
		if (strcmp(fstype, "cgroup2") == 0 && !v2) {
			v2 = strdup(mnt);
			if (!v2)
				return -ENOMEM;
		} else if (strcmp(fstype, "cgroup") == 0) {
			v1 = true;
		}
	}
	if (!v2 && !v1)
		return -ENOMEDIUM;
	*ret = !v2 ? QJ_CG_LEGACY : v1 ? QJ_CG_HYBRID : QJ_CG_UNIFIED;
	if (ret_v2_mount)
		*ret_v2_mount = TAKE_PTR(v2);
	return 0;
}

static void log_knobs(const struct qj_cgroup *c)
{
	static const char *const v2_knobs[] = { "cgroup.freeze", "cgroup.kill", "cgroup.events",
						"cpu.stat",	 "cpu.idle",	"cpu.weight" };
	char have[256] = "";

	for (size_t i = 0; i < ARRAY_SIZE(v2_knobs); i++)
		if (file_exists(c->path, v2_knobs[i])) {
			strncat(have, " ", sizeof(have) - strlen(have) - 1);
			strncat(have, v2_knobs[i], sizeof(have) - strlen(have) - 1);
		}
	log_debug("Jail %s: layout %s, cgroup2 knobs:%s; v1 cpu %s%s%s, idle knob %s", c->path,
		  qj_cg_layout_to_string(c->layout), have,
		  c->v1.cpu_path ? c->v1.cpu_path : "unused",
		  c->v1.cpu_path && file_exists(c->v1.cpu_path, "cpu.idle") ? " (cpu.idle)" : "",
		  c->v1.libcgroup ? " via libcgroup" : "", knob_names[c->knob]);
}

static enum idle_knob pick_knob(const struct qj_cgroup *c)
{
	if (file_exists(c->path, "cpu.idle"))
		return KNOB_V2_IDLE;
	if (file_exists(c->path, "cpu.weight"))
		return KNOB_V2_WEIGHT;
	if (c->v1.cpu_path && file_exists(c->v1.cpu_path, "cpu.idle"))
		return KNOB_V1_IDLE;
	if (c->v1.cpu_path && file_exists(c->v1.cpu_path, "cpu.shares"))
		return KNOB_V1_SHARES;
	return KNOB_NONE;
}

int qj_cgroup_new(const char *path, const char *cpu_path, struct qj_cgroup **ret)
{
	struct qj_cgroup *c;
	size_t n;
	int r;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	r = qj_cgroup_detect(&c->layout, &c->v2_mount);
	if (r < 0)
		goto fail;
	if (c->layout == QJ_CG_LEGACY) {
		r = log_debug_errno(-EOPNOTSUPP, "No cgroup2 mount: the jail needs cgroup2");
		goto fail;
	}
	n = strlen(c->v2_mount);
	if (strncmp(path, c->v2_mount, n) != 0 || path[n] != '/') {
		r = log_debug_errno(-EXDEV, "Jail %s is not under the cgroup2 mount %s", path,
				    c->v2_mount);
		goto fail;
	}
	c->path = strdup(path);
	c->v2_rel = strdup(path + n);
	if (!c->path || !c->v2_rel) {
		r = -ENOMEM;
		goto fail;
	}
	/* mkdir only: never enable controllers in a parent's subtree_control. */
	if (mkdir(path, 0755) < 0 && errno != EEXIST) {
		r = negative_errno();
		goto fail;
	}

	/* A v1 cpu group only where cpu is not available on cgroup2. */
	if (cpu_path && c->layout == QJ_CG_HYBRID && !file_exists(path, "cpu.idle") &&
	    !file_exists(path, "cpu.weight")) {
		struct stat st;
		_cleanup_free_ char *parent = strdup(cpu_path);
		char *slash = parent ? strrchr(parent, '/') : NULL;

		if (!parent) {
			r = -ENOMEM;
			goto fail;
		}
		if (slash)
			*slash = 0;
		if (slash && stat(parent, &st) == 0) {
			c->v1.cpu_path = strdup(cpu_path);
			if (!c->v1.cpu_path) {
				r = -ENOMEM;
				goto fail;
			}
			c->v1.libcgroup = cgroup_init() == 0 &&
					  qj_cgv1_rel(cpu_path, &c->v1.cpu_rel) == 0;
			if (!c->v1.libcgroup)
				log_debug("libcgroup does not serve v1 cpu here, using raw files");
			r = qj_cgv1_create(&c->v1, NULL);
			if (r < 0) {
				log_debug_errno(r, "Failed to create v1 cpu group %s: %m",
						cpu_path);
				goto fail;
			}
		}
	}
	c->knob = pick_knob(c);
	log_knobs(c);
	*ret = c;
	return 0;
fail:
	qj_cgroup_free(c);
	return r;
}

struct qj_cgroup *qj_cgroup_free(struct qj_cgroup *c)
{
	if (!c)
		return NULL;
	free(c->path);
	free(c->v2_mount);
	free(c->v2_rel);
	free(c->v1.cpu_path);
	free(c->v1.cpu_rel);
	free(c);
	return NULL;
}

char *qj_cgroup_app_path(const struct qj_cgroup *c, const char *app)
{
	return qj_cg_join(c->path, app);
}

static bool app_name_ok(const char *app)
{
	return app && *app && !strchr(app, '/') && strcmp(app, ".") != 0 &&
	       strcmp(app, "..") != 0 && strncmp(app, "cgroup.", 7) != 0;
}

int qj_cgroup_app_create(struct qj_cgroup *c, const char *app)
{
	_cleanup_free_ char *p = NULL;

	if (!app_name_ok(app))
		return -EINVAL;
	p = qj_cg_join(c->path, app);
	if (!p)
		return -ENOMEM;
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		return negative_errno();
	if (c->v1.cpu_path)
		return qj_cgv1_create(&c->v1, app);
	return 0;
}

int qj_cgroup_app_remove(struct qj_cgroup *c, const char *app)
{
	_cleanup_free_ char *p = qj_cg_join(c->path, app);
	int r = 0;

	if (!p)
		return -ENOMEM;
	if (rmdir(p) < 0 && errno != ENOENT)
		r = negative_errno();
	if (c->v1.cpu_path) {
		_cleanup_free_ char *v1 = qj_cg_join(c->v1.cpu_path, app);

		/* rmdir is what libcgroup's delete does for an empty group, minus task migration. */
		if (!v1)
			return -ENOMEM;
		if (rmdir(v1) < 0 && errno != ENOENT && r == 0)
			r = negative_errno();
	}
	return r;
}

int qj_cgroup_remove(struct qj_cgroup *c)
{
	int r = 0;

	if (rmdir(c->path) < 0 && errno != ENOENT)
		r = negative_errno();
	if (c->v1.cpu_path && rmdir(c->v1.cpu_path) < 0 && errno != ENOENT && r == 0)
		r = negative_errno();
	return r;
}

void qj_strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

int qj_cgroup_list_apps(const struct qj_cgroup *c, char ***ret)
{
	DIR *d;
	struct dirent *de;
	char **v = NULL;
	size_t n = 0;

	d = opendir(c->path);
	if (!d)
		return negative_errno();
	while ((de = readdir(d))) {
		char **nv;

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		nv = realloc(v, (n + 2) * sizeof(*v));
		if (!nv)
			goto oom;
		v = nv;
		v[n] = strdup(de->d_name);
		if (!v[n])
			goto oom;
		v[++n] = NULL;
	}
	closedir(d);
	if (!v) {
		v = calloc(1, sizeof(*v));
		if (!v)
			return -ENOMEM;
	}
	*ret = v;
	return (int)n;
oom:
	closedir(d);
	if (v)
		v[n] = NULL;
	qj_strv_free(v);
	return -ENOMEM;
}

int qj_cgroup_read_pids(const char *file, pid_t **ret, size_t *ret_n)
{
	_cleanup_free_ char *s = NULL;
	pid_t *v = NULL;
	size_t n = 0, cap = 0;
	int r;

	r = qj_read_file(file, &s);
	if (r < 0)
		return r;
	for (char *p = s, *end; *p; p = end) {
		long x = strtol(p, &end, 10);

		if (end == p)
			break;
		if (n == cap) {
			pid_t *nv = realloc(v, (cap = cap ? cap * 2 : 64) * sizeof(*v));

			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n++] = (pid_t)x;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

int qj_cgroup_app_pids(const struct qj_cgroup *c, const char *app, pid_t **ret, size_t *ret_n)
{
	char **apps = NULL;
	pid_t *all = NULL;
	size_t n = 0;
	int r;

	if (app) {
		_cleanup_free_ char *dir = qj_cg_join(c->path, app);
		_cleanup_free_ char *p = dir ? qj_cg_join(dir, "cgroup.procs") : NULL;

		return p ? qj_cgroup_read_pids(p, ret, ret_n) : -ENOMEM;
	}
	r = qj_cgroup_list_apps(c, &apps);
	if (r < 0)
		return r;
	for (char **a = apps; *a; a++) {
		pid_t *v = NULL, *nall;
		size_t k = 0;

		r = qj_cgroup_app_pids(c, *a, &v, &k);
		if (r == -ENOENT)
			continue; /* removed meanwhile */
		if (r < 0)
			goto out;
		nall = realloc(all, (n + k + 1) * sizeof(*all));
		if (!nall) {
			free(v);
			r = -ENOMEM;
			goto out;
		}
		all = nall;
		if (k)
			memcpy(all + n, v, k * sizeof(*v));
		n += k;
		free(v);
	}
	*ret = all;
	*ret_n = n;
	all = NULL;
	r = 0;
out:
	free(all);
	qj_strv_free(apps);
	return r;
}

static int app_file(const struct qj_cgroup *c, const char *app, const char *name, char **ret)
{
	_cleanup_free_ char *dir = app ? qj_cg_join(c->path, app) : strdup(c->path);

	if (!dir)
		return -ENOMEM;
	*ret = qj_cg_join(dir, name);
	return *ret ? 0 : -ENOMEM;
}

/* Does the text of /proc/PID/cgroup @s (cut up here) put its v1 cpu group in @app's? */
static int v1_is_in(const struct qj_cgroup *c, const char *app, char *s)
{
	_cleanup_free_ char *want = qj_cgv1_app_rel(&c->v1, app);

	if (!want)
		return -ENOMEM;
	for (char *line = s, *next; line && *line; line = next) {
		char *ctl, *cg;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		/* "ID:controller,controller:/path" */
		ctl = strchr(line, ':');
		cg = ctl ? strchr(ctl + 1, ':') : NULL;
		if (!cg)
			continue;
		*cg++ = 0;
		for (char *save = NULL, *tok = strtok_r(ctl + 1, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save))
			if (strcmp(tok, "cpu") == 0)
				return strcmp(cg, want) == 0;
	}
	return 0;
}

/*
 * Is thread @tid of @pid in @app's v1 cpu group?  Its own /proc file: the group's
 * tasks file lists every thread of the jail (O(n^2) over 10,000 placements).
 */
static int v1_thread_in(const struct qj_cgroup *c, const char *app, pid_t pid, pid_t tid)
{
	_cleanup_free_ char *s = NULL;
	char path[QJ_PROCFS_PATH_MAX];
	int r;

	qj_procfs_path(path, sizeof(path), "%d/task/%d/cgroup", pid, tid);
	r = qj_read_record_file(path, &s);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	return v1_is_in(c, app, s);
}

int qj_cgroup_place_v1(struct qj_cgroup *c, const char *app, pid_t pid)
{
	char taskdir[QJ_PROCFS_PATH_MAX];
	int moved, r = 0;

	if (!c->v1.cpu_path)
		return 0;
	qj_procfs_path(taskdir, sizeof(taskdir), "%d/task", pid);
	/* v1 membership is per thread; threads created meanwhile: another pass. */
	for (int pass = 0; pass < 3; pass++) {
		DIR *d = opendir(taskdir);
		struct dirent *de;

		if (!d)
			return errno == ENOENT ? -ESRCH : negative_errno();
		moved = 0;
		while ((de = readdir(d))) {
			pid_t tid = (pid_t)atoi(de->d_name);

			if (tid <= 0)
				continue;
			r = v1_thread_in(c, app, pid, tid);
			if (r == -ESRCH)
				continue; /* thread exited */
			if (r < 0)
				break;
			if (r > 0)
				continue;
			r = qj_cgv1_attach(&c->v1, app, tid);
			if (r == -ESRCH || r == -ENOENT)
				continue; /* thread exited */
			if (r < 0)
				break;
			moved++;
		}
		closedir(d);
		if (r < 0 && r != -ESRCH && r != -ENOENT)
			return r;
		if (moved == 0)
			return 0;
	}
	return 0;
}

int qj_cgroup_place(struct qj_cgroup *c, const char *app, pid_t pid)
{
	_cleanup_free_ char *procs = NULL;
	char buf[16];
	int r;

	if (!app_name_ok(app))
		return -EINVAL;
	r = app_file(c, app, "cgroup.procs", &procs);
	if (r < 0)
		return r;
	snprintf(buf, sizeof(buf), "%d", pid);
	/* cgroup.procs moves the whole thread group. */
	r = qj_write_file(procs, buf);
	if (r < 0)
		return r;
	return qj_cgroup_place_v1(c, app, pid);
}

static int read_pid_cgroup(pid_t pid, char **ret)
{
	char path[QJ_PROCFS_PATH_MAX];
	int r;

	qj_procfs_path(path, sizeof(path), "%d/cgroup", pid);
	r = qj_read_record_file(path, ret);
	return r == -ENOENT ? -ESRCH : r;
}

/* qj_cgroup_app_of_pid() from the text of /proc/PID/cgroup @s (cut up here). */
static int v2_app_of(const struct qj_cgroup *c, char *s, char **ret_app)
{
	size_t rel = strlen(c->v2_rel);

	for (char *line = s, *next; line && *line; line = next) {
		const char *cg, *app;
		size_t len;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (strncmp(line, "0::", 3) != 0)
			continue;
		cg = line + 3;
		if (strncmp(cg, c->v2_rel, rel) != 0 || cg[rel] != '/')
			return 0;
		app = cg + rel + 1;
		len = strcspn(app, "/");
		if (len == 0)
			return 0;
		if (ret_app) {
			*ret_app = strndup(app, len);
			if (!*ret_app)
				return -ENOMEM;
		}
		return 1;
	}
	return 0;
}

int qj_cgroup_app_of_pid(const struct qj_cgroup *c, pid_t pid, char **ret_app)
{
	_cleanup_free_ char *s = NULL;
	int r = read_pid_cgroup(pid, &s);

	return r < 0 ? r : v2_app_of(c, s, ret_app);
}

int qj_cgroup_app_v1_tids(const struct qj_cgroup *c, const char *app, pid_t **ret, size_t *ret_n)
{
	_cleanup_free_ char *tasks = NULL;
	int r;

	if (!c->v1.cpu_path)
		return 0;
	tasks = qj_cgv1_knob_path(&c->v1, app, "tasks");
	if (!tasks)
		return -ENOMEM;
	r = qj_cgroup_read_pids(tasks, ret, ret_n);
	return r < 0 ? r : 1;
}

int qj_cgroup_freeze(struct qj_cgroup *c, const char *app, bool freeze)
{
	_cleanup_free_ char *p = NULL;
	int r = app_file(c, app, "cgroup.freeze", &p);

	return r < 0 ? r : qj_write_file(p, freeze ? "1" : "0");
}

int qj_cgroup_freeze_requested(const struct qj_cgroup *c, const char *app)
{
	_cleanup_free_ char *p = NULL, *s = NULL;
	int r = app_file(c, app, "cgroup.freeze", &p);

	if (r < 0)
		return r;
	r = qj_read_file(p, &s);
	if (r < 0)
		return r;
	return s[0] == '1';
}

int qj_cgroup_event(const struct qj_cgroup *c, const char *app, const char *key)
{
	_cleanup_free_ char *p = NULL, *s = NULL;
	size_t k = strlen(key);
	int r = app_file(c, app, "cgroup.events", &p);

	if (r < 0)
		return r;
	r = qj_read_file(p, &s);
	if (r < 0)
		return r;
	for (char *line = s; line && *line;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (strncmp(line, key, k) == 0 && line[k] == ' ')
			return line[k + 1] == '1';
	return -ENODATA;
}

int qj_cgroup_kill(struct qj_cgroup *c, const char *app)
{
	_cleanup_free_ char *p = NULL;
	int r = app_file(c, app, "cgroup.kill", &p);

	return r < 0 ? r : qj_write_file(p, "1");
}

/* The number after @key in @app's @file; @key must be in the file's first line when @first. */
static int read_app_counter(const struct qj_cgroup *c, const char *app, const char *file,
			    const char *key, bool first, uint64_t *ret)
{
	_cleanup_free_ char *p = NULL, *s = NULL;
	const char *u;
	int r = app_file(c, app, file, &p);

	if (r < 0)
		return r;
	r = qj_read_file(p, &s);
	if (r < 0)
		return r;
	u = strstr(s, key);
	if (!u || (first && strchr(s, '\n') && u > strchr(s, '\n')))
		return -ENODATA;
	*ret = strtoull(u + strlen(key), NULL, 10);
	return 0;
}

int qj_cgroup_usage_usec(const struct qj_cgroup *c, const char *app, uint64_t *ret)
{
	return read_app_counter(c, app, "cpu.stat", "usage_usec ", false, ret);
}

/* The "some" line comes first in cpu.pressure: its total= is the stall time. */
int qj_cgroup_cpu_stall_usec(const struct qj_cgroup *c, const char *app, uint64_t *ret)
{
	return read_app_counter(c, app, "cpu.pressure", "total=", true, ret);
}

static int knob_get(const struct qj_cgroup *c, enum idle_knob k, int64_t *ret)
{
	_cleanup_free_ char *p = NULL;

	switch (k) {
	case KNOB_V2_IDLE:
	case KNOB_V2_WEIGHT:
		p = qj_cg_join(c->path, k == KNOB_V2_IDLE ? "cpu.idle" : "cpu.weight");
		if (!p)
			return -ENOMEM;
		return qj_read_int64_file(p, ret);
	case KNOB_V1_IDLE:
		return qj_cgv1_get(&c->v1, NULL, "cpu.idle", ret);
	case KNOB_V1_SHARES:
		return qj_cgv1_get(&c->v1, NULL, "cpu.shares", ret);
	default:
		return -EOPNOTSUPP;
	}
}

static int knob_set(struct qj_cgroup *c, enum idle_knob k, int64_t v)
{
	_cleanup_free_ char *p = NULL;

	switch (k) {
	case KNOB_V2_IDLE:
	case KNOB_V2_WEIGHT:
		p = qj_cg_join(c->path, k == KNOB_V2_IDLE ? "cpu.idle" : "cpu.weight");
		if (!p)
			return -ENOMEM;
		return qj_write_int64_file(p, v);
	case KNOB_V1_IDLE:
		return qj_cgv1_set(&c->v1, NULL, "cpu.idle", v);
	case KNOB_V1_SHARES:
		return qj_cgv1_set(&c->v1, NULL, "cpu.shares", v);
	default:
		return -EOPNOTSUPP;
	}
}

bool qj_cgroup_has_idle_knob(const struct qj_cgroup *c)
{
	return c->knob != KNOB_NONE;
}

int qj_cgroup_set_idle(struct qj_cgroup *c, bool idle)
{
	static const int64_t lowest[_KNOB_MAX] = {
		[KNOB_V2_IDLE] = 1, [KNOB_V2_WEIGHT] = 1, [KNOB_V1_IDLE] = 1, [KNOB_V1_SHARES] = 2
	};
	int64_t old;
	int r;

	if (c->knob == KNOB_NONE)
		return 0;
	if (!idle) {
		if (!c->idle_applied)
			return 0;
		r = knob_set(c, c->knob, c->idle_old);
		if (r < 0)
			return r;
		c->idle_applied = false;
		return 1;
	}
	if (c->idle_applied)
		return 1;
	r = knob_get(c, c->knob, &old);
	if (r < 0)
		return r;
	r = knob_set(c, c->knob, lowest[c->knob]);
	if (r < 0)
		return r;
	c->idle_old = old;
	c->idle_applied = true;
	return 1;
}

int qj_cgroup_idle_saved(const struct qj_cgroup *c, const char **ret_knob, int64_t *ret_old)
{
	if (!c->idle_applied)
		return -ENODATA;
	*ret_knob = knob_names[c->knob];
	*ret_old = c->idle_old;
	return 0;
}

int qj_cgroup_idle_restore(struct qj_cgroup *c, const char *knob, int64_t old)
{
	for (int k = KNOB_V2_IDLE; k < _KNOB_MAX; k++)
		if (strcmp(knob, knob_names[k]) == 0) {
			if (k != (int)c->knob)
				return -EXDEV; /* the layout changed since: nothing of ours there */
			c->idle_applied = false;
			return knob_set(c, (enum idle_knob)k, old);
		}
	return -EINVAL;
}
