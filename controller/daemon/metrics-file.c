// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Writing the metrics file as root (see metrics.h): into a directory node_exporter's user
 * may own, on a path no user may redirect.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirwalk.h"
#include "metrics.h"
#include "util.h"

int qj_metrics_open_dir(const char *path, int *ret_dfd, char **ret_base)
{
	_cleanup_free_ char *dir = strdup(path), *base = NULL;
	char *slash = dir ? strrchr(dir, '/') : NULL;
	int r;

	if (!dir)
		return -ENOMEM;
	if (!slash || !slash[1] || strcmp(slash + 1, ".") == 0 || strcmp(slash + 1, "..") == 0)
		return -EINVAL;
	base = strdup(slash + 1);
	if (!base)
		return -ENOMEM;
	slash[slash == dir] = '\0'; /* "/x" keeps "/" */
	r = qj_open_dir_walked(dir, QJ_WALK_READABLE, ret_dfd);
	if (r < 0)
		return r;
	*ret_base = TAKE_PTR(base);
	return 0;
}

int qj_metrics_write_at(int dfd, const char *base, const char *text, size_t len)
{
	_cleanup_close_ int fd = -EBADF;
	char tmp[NAME_MAX + 1];
	struct stat st;
	int r;

	/*
	 * A symlink in its place is refused, not replaced: whoever planted it meant the
	 * file to be elsewhere.  (Were one planted after this check, rename() would
	 * replace the link itself, never write through it.)
	 */
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISLNK(st.st_mode))
			return -ELOOP;
		if (!S_ISREG(st.st_mode))
			return -EEXIST;
	} else if (errno != ENOENT) {
		return -errno;
	}
	/* A dot name: the textfile collector reads only *.prom, never a half-written file. */
	if ((size_t)snprintf(tmp, sizeof(tmp), ".%s.%d.tmp", base, (int)getpid()) >= sizeof(tmp))
		return -ENAMETOOLONG;
	(void)unlinkat(dfd, tmp, 0); /* a leftover of a crash, or anything planted there */
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	r = fchmod(fd, 0644) < 0 ? -errno : 0; /* whatever the umask: the collector reads it */
	for (size_t off = 0; r == 0 && off < len;) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0)
			r = -errno;
		else
			off += (size_t)n;
	}
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (r == 0 && renameat(dfd, tmp, dfd, base) < 0)
		r = -errno;
	if (r < 0) {
		(void)unlinkat(dfd, tmp, 0);
		return r;
	}
	(void)fsync(dfd); /* the rename itself survives a crash */
	return 0;
}
