// SPDX-License-Identifier: LGPL-2.1-or-later
/* Whole-file reads and writes of small kernel files (cgroup, /proc). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "util.h"

static int read_text(const char *path, bool one_record, char **ret)
{
	_cleanup_close_ int fd = -EBADF;
	size_t cap = 4096, len = 0;
	char *buf;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return negative_errno();
	buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *nb = realloc(buf, cap * 2 + 1);

			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		/* cgroup.procs hands out at most 4096 bytes per read: loop to EOF. */
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			int r = negative_errno();

			if (r == -EINTR)
				continue;
			free(buf);
			return r;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		/* Short of the buffer: the whole record, no second read to see the end. */
		if (one_record && len < cap)
			break;
	}
	buf[len] = 0;
	*ret = buf;
	return 0;
}

int qj_read_file(const char *path, char **ret)
{
	return read_text(path, false, ret);
}

int qj_read_record_file(const char *path, char **ret)
{
	return read_text(path, true, ret);
}

int qj_write_file(const char *path, const char *s)
{
	_cleanup_close_ int fd = -EBADF;
	size_t len = strlen(s);
	ssize_t n;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return negative_errno();
	n = write(fd, s, len);
	if (n < 0)
		return negative_errno();
	if ((size_t)n != len)
		return -EIO;
	return 0;
}

int qj_read_int64_file(const char *path, int64_t *ret)
{
	_cleanup_free_ char *s = NULL;
	char *end;
	long long v;
	int r = read_text(path, true, &s);

	if (r < 0)
		return r;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || errno == ERANGE || (*end && strcmp(end, "\n") != 0))
		return -EBADMSG;
	*ret = v;
	return 0;
}

int qj_write_int64_file(const char *path, int64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRId64, v);
	return qj_write_file(path, buf);
}
