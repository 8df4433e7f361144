// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Kill log writer.  Each record is one write(2) of one line followed by
 * fsync(2): an operator reading the log after a crash sees every action that
 * was taken, and O_APPEND keeps concurrent readers from seeing torn lines.
 */
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "killlog.h"
#include "util.h"

struct qj_killlog {
	char *path;
	char *base; /* last component of path, opened relative to dir_fd */
	int dir_fd;
	int fd;
	uint64_t size;
	uint64_t max_bytes;
	unsigned keep;
};

static int open_log(struct qj_killlog *l)
{
	struct stat st;

	/* O_NOFOLLOW and a directory only root can write: nobody redirects the writer. */
	l->fd = openat(l->dir_fd, l->base,
		       O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0640);
	if (l->fd < 0)
		return negative_errno();
	if (fstat(l->fd, &st) < 0)
		return negative_errno();
	if (!S_ISREG(st.st_mode) || st.st_nlink != 1) {
		(void)close(l->fd);
		l->fd = -EBADF;
		return -EPERM;
	}
	l->size = (uint64_t)st.st_size;
	return 0;
}

static bool trusted_owner(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

/*
 * Opens the log's directory, creating it (0750) when missing, without
 * following a symlink in any component.  Every directory on the way must be
 * owned by root and not writable by group or others, except that an
 * intermediate one may be a sticky world-writable directory such as /tmp;
 * the log's own directory may not.
 */
static int open_log_dir(const char *dir, int *ret_fd)
{
	_cleanup_free_ char *copy = strdup(dir);
	_cleanup_close_ int fd = -EBADF;
	char *comp, *save = NULL;
	struct stat st;

	if (!copy)
		return -ENOMEM;
	if (dir[0] != '/')
		return -EINVAL;
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return negative_errno();
	for (comp = strtok_r(copy, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		int next;

		if (fstat(fd, &st) < 0)
			return negative_errno();
		if (!trusted_owner(st.st_uid) || ((st.st_mode & 0022) && !(st.st_mode & S_ISVTX)))
			return -EPERM;
		if (mkdirat(fd, comp, 0750) < 0 && errno != EEXIST)
			return negative_errno();
		next = openat(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0)
			return errno == ENOTDIR ? -ELOOP : negative_errno();
		(void)close(fd);
		fd = next;
	}
	if (fstat(fd, &st) < 0)
		return negative_errno();
	if (!trusted_owner(st.st_uid) || (st.st_mode & 0022))
		return -EPERM;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int qj_killlog_open(const char *path, uint64_t max_bytes, unsigned keep, struct qj_killlog **ret)
{
	struct qj_killlog *l;
	_cleanup_free_ char *dir = NULL, *base = NULL;
	int r;

	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->fd = -EBADF;
	l->dir_fd = -EBADF;
	l->max_bytes = max_bytes;
	l->keep = keep;
	l->path = strdup(path);
	dir = strdup(path);
	base = strdup(path);
	if (!l->path || !dir || !base) {
		qj_killlog_free(l);
		return -ENOMEM;
	}
	l->base = strdup(basename(base));
	if (!l->base) {
		qj_killlog_free(l);
		return -ENOMEM;
	}
	r = open_log_dir(dirname(dir), &l->dir_fd);
	if (r >= 0)
		r = open_log(l);
	if (r < 0) {
		qj_killlog_free(l);
		return r;
	}
	*ret = l;
	return 0;
}

struct qj_killlog *qj_killlog_free(struct qj_killlog *l)
{
	if (!l)
		return NULL;
	if (l->fd >= 0)
		(void)close(l->fd);
	if (l->dir_fd >= 0)
		(void)close(l->dir_fd);
	free(l->path);
	free(l->base);
	free(l);
	return NULL;
}

const char *qj_killlog_path(const struct qj_killlog *l)
{
	return l->path;
}

int qj_killlog_open_reader(const struct qj_killlog *l)
{
	char proc[64];
	int fd;

	if (l->fd < 0)
		return -EBADF;
	/* The file the daemon writes, never a path lookup: an own offset, read-only. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", l->fd);
	fd = open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return negative_errno();
	return fd;
}

static int rotate(struct qj_killlog *l)
{
	size_t n = strlen(l->base) + 16;
	_cleanup_free_ char *from = malloc(n);
	_cleanup_free_ char *to = malloc(n);

	if (!from || !to)
		return -ENOMEM;
	(void)close(l->fd);
	l->fd = -EBADF;
	if (l->keep == 0) {
		if (unlinkat(l->dir_fd, l->base, 0) < 0 && errno != ENOENT)
			return negative_errno();
		return open_log(l);
	}
	/* path.(keep-1) -> path.keep, ..., path -> path.1: the oldest falls off. */
	for (unsigned i = l->keep; i > 0; i--) {
		if (i == 1)
			snprintf(from, n, "%s", l->base);
		else
			snprintf(from, n, "%s.%u", l->base, i - 1);
		snprintf(to, n, "%s.%u", l->base, i);
		/* renameat() moves symlinks themselves; the directory is root's only. */
		if (renameat(l->dir_fd, from, l->dir_fd, to) < 0 && errno != ENOENT)
			return negative_errno();
	}
	return open_log(l);
}

int qj_format_rfc3339(uint64_t realtime_usec, char *buf, size_t size)
{
	time_t sec = (time_t)(realtime_usec / USEC_PER_SEC);
	struct tm tm;
	char date[24];

	if (!gmtime_r(&sec, &tm))
		return -EOVERFLOW;
	if (strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
		return -EOVERFLOW;
	if ((size_t)snprintf(buf, size, "%s.%03uZ", date,
			     (unsigned)(realtime_usec % USEC_PER_SEC / USEC_PER_MSEC)) >= size)
		return -ENOBUFS;
	return 0;
}

int qj_parse_rfc3339(const char *s, uint64_t *ret_usec)
{
	struct tm tm = {};
	const char *p;
	uint64_t frac = 0, scale = USEC_PER_SEC;
	long offset = 0;
	time_t t;

	p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!p)
		return -EINVAL;
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++)
			if (scale > 1) {
				scale /= 10;
				frac += (uint64_t)(*p - '0') * scale;
			}
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
		int hh, mm;

		if (sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2)
			return -EINVAL;
		offset = (hh * 60L + mm) * 60L * (*p == '+' ? 1 : -1);
		p += 6;
	} else {
		return -EINVAL;
	}
	if (*p)
		return -EINVAL;
	t = timegm(&tm);
	if (t == (time_t)-1 || t - offset < 0)
		return -ERANGE;
	*ret_usec = (uint64_t)(t - offset) * USEC_PER_SEC + frac;
	return 0;
}

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

int qj_killlog_append_json(struct qj_killlog *l, json_t *obj)
{
	_cleanup_free_ char *line = NULL;
	size_t len;
	int r;

	if (!json_object_get(obj, "ts")) {
		char ts[32];
		struct timespec now;

		(void)clock_gettime(CLOCK_REALTIME, &now);
		r = qj_format_rfc3339(timespec_to_usec(&now), ts, sizeof(ts));
		if (r < 0)
			return r;
		if (json_object_set_new(obj, "ts", json_string(ts)) < 0)
			return -ENOMEM;
	}
	line = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!line)
		return -ENOMEM;
	len = strlen(line);
	line[len++] = '\n'; /* json_dumps left room for the NUL we overwrite */

	if (l->max_bytes > 0 && l->size > 0 && l->size + len > l->max_bytes) {
		r = rotate(l);
		if (r < 0)
			return r;
	}
	if (l->fd < 0)
		return -EBADF;
	/* One write: O_APPEND makes it atomic against other appenders and readers. */
	for (size_t off = 0; off < len;) {
		ssize_t n = write(l->fd, line + off, len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		off += (size_t)n;
	}
	l->size += len;
	if (fsync(l->fd) < 0)
		return negative_errno();
	return 0;
}

int qj_killlog_append(struct qj_killlog *l, const struct qj_kill_record *rec)
{
	json_t *o;
	char ts[32];
	int r;

	r = qj_format_rfc3339(rec->ts_usec, ts, sizeof(ts));
	if (r < 0)
		return r;
	o = json_object();
	if (!o)
		return -ENOMEM;
	/* Field order is the documented one; operators grep these lines. */
	if (json_object_set_new(o, "ts", json_string(ts)) < 0 ||
	    json_object_set_new(o, "cycle", json_integer((json_int_t)rec->cycle)) < 0 ||
	    json_object_set_new(o, "app", str_or_null(rec->app)) < 0 ||
	    json_object_set_new(o, "pid", json_integer(rec->pid)) < 0 ||
	    json_object_set_new(o, "comm", str_or_null(rec->comm)) < 0 ||
	    json_object_set_new(o, "exe", str_or_null(rec->exe)) < 0 ||
	    json_object_set_new(o, "uid", json_integer(rec->uid)) < 0 ||
	    json_object_set_new(o, "cgroup", str_or_null(rec->cgroup)) < 0 ||
	    json_object_set_new(o, "action", str_or_null(rec->action)) < 0 ||
	    json_object_set_new(o, "rung", json_integer(rec->rung)) < 0 ||
	    json_object_set_new(o, "rung_name", str_or_null(rec->rung_name)) < 0 ||
	    json_object_set_new(o, "reason", str_or_null(rec->reason)) < 0 ||
	    json_object_set_new(o, "cpu_ms", json_integer((json_int_t)rec->cpu_ms)) < 0 ||
	    json_object_set_new(o, "window_ms", json_integer((json_int_t)rec->window_ms)) < 0 ||
	    json_object_set_new(o, "outcome", str_or_null(rec->outcome)) < 0 ||
	    json_object_set_new(o, "strikes", json_integer(rec->strikes)) < 0) {
		json_decref(o);
		return -ENOMEM;
	}
	r = qj_killlog_append_json(l, o);
	json_decref(o);
	return r;
}
