// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The jail's v1 cpu groups (hybrid hosts): libcgroup 2.0 serves the v1 cpu controller
 * here (create, attach, cpu.idle/cpu.shares), raw files when it cannot initialise
 * (docs/platform.md).
 */
#include <errno.h>
#include <libcgroup.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup-v1.h"
#include "fileio.h"
#include "util.h"

static int lcg_errno(int r)
{
	if (r == 0)
		return 0;
	if (r == ECGOTHER) {
		int e = cgroup_get_last_errno();

		return e > 0 ? -e : -EIO;
	}
	if (r == ECGROUPNOTEXIST)
		return -ENOENT;
	return -EIO;
}

/* libcgroup wants paths relative to the controller's mount point. */
int qj_cgv1_rel(const char *cpu_path, char **ret)
{
	char *mnt = NULL;
	size_t n;
	int r;

	r = cgroup_get_subsys_mount_point("cpu", &mnt);
	if (r != 0)
		return lcg_errno(r);
	n = strlen(mnt);
	if (strncmp(cpu_path, mnt, n) != 0 || (cpu_path[n] != '/' && cpu_path[n] != 0)) {
		free(mnt);
		return -EXDEV;
	}
	*ret = strdup(cpu_path[n] ? cpu_path + n : "/");
	free(mnt);
	return *ret ? 0 : -ENOMEM;
}

char *qj_cgv1_app_rel(const struct qj_cgv1 *c, const char *app)
{
	return app ? qj_cg_join(c->cpu_rel, app) : strdup(c->cpu_rel);
}

static char *v1_app_path(const struct qj_cgv1 *c, const char *app)
{
	return app ? qj_cg_join(c->cpu_path, app) : strdup(c->cpu_path);
}

/* A knob file of an app's v1 cpu group (the jail's own for @app NULL). */
char *qj_cgv1_knob_path(const struct qj_cgv1 *c, const char *app, const char *knob)
{
	_cleanup_free_ char *dir = v1_app_path(c, app);

	return dir ? qj_cg_join(dir, knob) : NULL;
}

/* Creates a v1 cpu group through libcgroup (it needs a controller or it does nothing). */
int qj_cgv1_create(const struct qj_cgv1 *c, const char *app)
{
	_cleanup_free_ char *rel = qj_cgv1_app_rel(c, app);
	_cleanup_free_ char *path = v1_app_path(c, app);
	struct cgroup *cg;
	int r;

	if (!rel || !path)
		return -ENOMEM;
	if (access(path, F_OK) == 0)
		return 0;
	if (!c->libcgroup)
		return mkdir(path, 0755) < 0 && errno != EEXIST ? negative_errno() : 0;
	cg = cgroup_new_cgroup(rel);
	if (!cg)
		return -ENOMEM;
	if (!cgroup_add_controller(cg, "cpu")) {
		cgroup_free(&cg);
		return -ENOMEM;
	}
	r = lcg_errno(cgroup_create_cgroup(cg, 0));
	cgroup_free(&cg);
	if (r == 0 && access(path, F_OK) < 0)
		return -EIO; /* the silent failure docs/platform.md warns about */
	return r;
}

int qj_cgv1_set(const struct qj_cgv1 *c, const char *app, const char *knob, int64_t v)
{
	_cleanup_free_ char *rel = qj_cgv1_app_rel(c, app);
	struct cgroup_controller *ctl;
	struct cgroup *cg;
	int r;

	if (!rel)
		return -ENOMEM;
	if (!c->libcgroup) {
		_cleanup_free_ char *p = qj_cgv1_knob_path(c, app, knob);

		return p ? qj_write_int64_file(p, v) : -ENOMEM;
	}
	cg = cgroup_new_cgroup(rel);
	if (!cg)
		return -ENOMEM;
	ctl = cgroup_add_controller(cg, "cpu");
	r = ctl ? lcg_errno(cgroup_add_value_int64(ctl, knob, v)) : -ENOMEM;
	if (r == 0)
		r = lcg_errno(cgroup_modify_cgroup(cg));
	cgroup_free(&cg);
	return r;
}

int qj_cgv1_get(const struct qj_cgv1 *c, const char *app, const char *knob, int64_t *ret)
{
	_cleanup_free_ char *rel = qj_cgv1_app_rel(c, app);
	struct cgroup_controller *ctl;
	struct cgroup *cg;
	int r;

	if (!rel)
		return -ENOMEM;
	if (!c->libcgroup) {
		_cleanup_free_ char *p = qj_cgv1_knob_path(c, app, knob);

		return p ? qj_read_int64_file(p, ret) : -ENOMEM;
	}
	cg = cgroup_new_cgroup(rel);
	if (!cg)
		return -ENOMEM;
	r = lcg_errno(cgroup_get_cgroup(cg));
	if (r == 0) {
		ctl = cgroup_get_controller(cg, "cpu");
		r = ctl ? lcg_errno(cgroup_get_value_int64(ctl, knob, ret)) : -ENOENT;
	}
	cgroup_free(&cg);
	return r;
}

int qj_cgv1_attach(const struct qj_cgv1 *c, const char *app, pid_t tid)
{
	_cleanup_free_ char *rel = qj_cgv1_app_rel(c, app);
	struct cgroup *cg;
	int r;

	if (!rel)
		return -ENOMEM;
	if (!c->libcgroup) {
		_cleanup_free_ char *p = qj_cgv1_knob_path(c, app, "tasks");
		char buf[16];

		if (!p)
			return -ENOMEM;
		snprintf(buf, sizeof(buf), "%d", tid);
		return qj_write_file(p, buf);
	}
	cg = cgroup_new_cgroup(rel);
	if (!cg)
		return -ENOMEM;
	r = cgroup_add_controller(cg, "cpu") ? lcg_errno(cgroup_attach_task_pid(cg, tid)) : -ENOMEM;
	cgroup_free(&cg);
	return r;
}
