/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What cgroup.c (the jail's v2 groups, the idle knob) and cgroup-v1.c (the v1 cpu groups) share. */
#ifndef QJ_CGROUP_INTERNAL_H
#define QJ_CGROUP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "cgroup.h"

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
	char *cpu_path; /* v1 cpu jail directory, NULL when unused */
	char *cpu_rel; /* relative to the v1 cpu mount, for libcgroup */
	bool libcgroup; /* cgroup_init() worked and serves v1 cpu */
	enum idle_knob knob;
	bool idle_applied;
	int64_t idle_old;
};

/* "@a/@b", or NULL when out of memory. */
static inline char *qj_cg_join(const char *a, const char *b)
{
	char *s;

	if (asprintf(&s, "%s/%s", a, b) < 0)
		return NULL;
	return s;
}

/* cgroup-v1.c: the v1 cpu groups, through libcgroup or raw files. */
/* @cpu_path relative to the v1 cpu mount, for libcgroup.  -EXDEV when not under it. */
int qj_cgv1_rel(const char *cpu_path, char **ret);
/* The v1 cpu group of @app (NULL: the jail's own) as a path. */
char *qj_cgv1_app_rel(const struct qj_cgroup *c, const char *app);
char *qj_cgv1_knob_path(const struct qj_cgroup *c, const char *app, const char *knob);
int qj_cgv1_create(const struct qj_cgroup *c, const char *app);
int qj_cgv1_set(const struct qj_cgroup *c, const char *app, const char *knob, int64_t v);
int qj_cgv1_get(const struct qj_cgroup *c, const char *app, const char *knob, int64_t *ret);
int qj_cgv1_attach(const struct qj_cgroup *c, const char *app, pid_t tid);

#endif
