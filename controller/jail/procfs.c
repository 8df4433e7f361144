// SPDX-License-Identifier: LGPL-2.1-or-later
/* Where /proc is (see procfs.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "procfs.h"

static char root[QJ_PROCFS_ROOT_MAX + 1] = "/proc";

int qj_procfs_set_root(const char *r)
{
	if (!r)
		r = "/proc";
	if (strlen(r) > QJ_PROCFS_ROOT_MAX)
		return -ENAMETOOLONG;
	strcpy(root, r);
	return 0;
}

const char *qj_procfs_root(void)
{
	return root;
}

int qj_procfs_path(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n, m;

	n = snprintf(buf, size, "%s/", root);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	va_start(ap, fmt);
	m = vsnprintf(buf + n, size - (size_t)n, fmt, ap);
	va_end(ap);
	if (m < 0 || (size_t)m >= size - (size_t)n)
		return -ENAMETOOLONG;
	return 0;
}
