// SPDX-License-Identifier: LGPL-2.1-or-later
/* A directory opened on a path no user can redirect (dirwalk.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirwalk.h"
#include "util.h"

static bool trusted_owner(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

int qj_open_dir_walked(const char *dir, unsigned flags, int *ret_fd)
{
	_cleanup_free_ char *copy = strdup(dir);
	_cleanup_close_ int fd = -EBADF;
	char *comp, *save = NULL;
	struct stat st;

	if (!copy)
		return -ENOMEM;
	if (dir[0] != '/')
		return -EINVAL;
	/* O_PATH on the way: a directory we may pass through but not list is fine. */
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return negative_errno();
	for (comp = strtok_r(copy, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		int next;

		if (fstat(fd, &st) < 0)
			return negative_errno();
		if (!trusted_owner(st.st_uid) || ((st.st_mode & 0022) && !(st.st_mode & S_ISVTX)))
			return -EPERM;
		if ((flags & QJ_WALK_CREATE) && mkdirat(fd, comp, 0750) < 0 && errno != EEXIST)
			return negative_errno();
		next = openat(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0)
			return errno == ENOTDIR ? -ELOOP : negative_errno();
		(void)close(fd);
		fd = next;
	}
	if (flags & QJ_WALK_PRIVATE) {
		if (fstat(fd, &st) < 0)
			return negative_errno();
		if (!trusted_owner(st.st_uid) || (st.st_mode & 0022))
			return -EPERM;
	}
	if (flags & QJ_WALK_READABLE) {
		/* The same directory, never a name looked up again. */
		int rd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (rd < 0)
			return negative_errno();
		(void)close(fd);
		fd = rd;
	}
	*ret_fd = TAKE_FD(fd);
	return 0;
}
