/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The v1 cpu groups of a hybrid host (cgroup-v1.c), for cgroup.c.  Private to jail/. */
#ifndef QJ_CGROUP_V1_H
#define QJ_CGROUP_V1_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* The jail's v1 cpu group (hybrid hosts; no path when unused). */
struct qj_cgv1 {
	char *cpu_path; /* v1 cpu jail directory, NULL when unused */
	char *cpu_rel; /* relative to the v1 cpu mount, for libcgroup */
	bool libcgroup; /* cgroup_init() worked and serves v1 cpu */
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
char *qj_cgv1_app_rel(const struct qj_cgv1 *c, const char *app);
char *qj_cgv1_knob_path(const struct qj_cgv1 *c, const char *app, const char *knob);
int qj_cgv1_create(const struct qj_cgv1 *c, const char *app);
int qj_cgv1_set(const struct qj_cgv1 *c, const char *app, const char *knob, int64_t v);
int qj_cgv1_get(const struct qj_cgv1 *c, const char *app, const char *knob, int64_t *ret);
int qj_cgv1_attach(const struct qj_cgv1 *c, const char *app, pid_t tid);

#endif
