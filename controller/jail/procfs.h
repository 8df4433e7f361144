/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where /proc is.  The jail's /proc readers build their paths here, so the engine's unit
 * tests can give it a fake /proc tree (tests/unit/test-engine.c) the way the pure
 * deciders' tests give them text.
 */
#ifndef QJ_PROCFS_H
#define QJ_PROCFS_H

#include <stddef.h>

/* Room for any path under the root (the root itself is at most QJ_PROCFS_ROOT_MAX). */
#define QJ_PROCFS_ROOT_MAX 128
#define QJ_PROCFS_PATH_MAX 256

/* Makes @root (NULL: "/proc") the /proc of this process's readers.  -ENAMETOOLONG. */
int qj_procfs_set_root(const char *root);
const char *qj_procfs_root(void);
/* Formats "ROOT/" @fmt into @buf; -ENAMETOOLONG when it does not fit. */
int qj_procfs_path(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
