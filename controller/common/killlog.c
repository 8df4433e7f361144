// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Kill log writer.  Each record is one write(2) of one line followed by
 * fsync(2), or, between qj_killlog_defer_sync() and qj_killlog_sync(), one
 * fsync for all: an operator reading the log after a crash sees every action that
 * was taken, and O_APPEND keeps concurrent readers from seeing torn lines.
 * When the disk is full a record is cut back whole, counted, and a gap record
 * tells the reader how many are missing once records fit again.
 */
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dirwalk.h"
#include "escape.h"
#include "killlog-read.h"
#include "killlog.h"
#include "rfc3339.h"
#include "util.h"

struct qj_killlog {
	char *path;
	char *base; /* last component of path, opened relative to dir_fd */
	int dir_fd;
	int fd;
	uint64_t size;
	uint64_t max_bytes;
	unsigned keep;

	/* Records that could not be written (disk full, I/O error). */
	uint64_t lost; /* since open */
	uint64_t unrecorded; /* lost and not yet told by a gap record */
	int last_error;
	char first_lost_ts[32], last_lost_ts[32]; /* of the unrecorded ones */
	bool torn; /* a failed write could not be cut back: fence it off with a newline */
	uint64_t highest_cycle; /* in the log and its newest rotation at open */

	/* qj_killlog_defer_sync(): records written since, not yet fsync'd. */
	bool deferring;
	unsigned n_unsynced; /* records (gap records not counted) */
	uint64_t unsynced_from; /* the log's size before the first of them */
	uint64_t unsynced_gap_lost; /* losses a deferred gap record told */
	char first_unsynced_ts[32], last_unsynced_ts[32];

	/* qj_killlog_cycle_begin(): the running cycle and when it began (wall clock). */
	uint64_t begin_cycle;
	char begin_ts[32];
};

/*
 * Cuts a line left unfinished at the end of the log (a write cut short, then a
 * crash, or a truncate that failed) back to the last newline, so the next record
 * starts a line of its own.  Records are far smaller than the window read.
 */
static int cut_torn_tail(int fd, uint64_t *size)
{
	char buf[65536];
	uint64_t start = *size > sizeof(buf) ? *size - sizeof(buf) : 0;
	ssize_t n;

	if (*size == 0)
		return 0;
	n = pread(fd, buf, (size_t)(*size - start), (off_t)start);
	if (n < 0)
		return negative_errno();
	if (n > 0 && buf[n - 1] == '\n')
		return 0;
	while (n > 0 && buf[n - 1] != '\n')
		n--;
	if (n == 0 && start > 0) /* no newline in the window: fence it off instead */
		return -EBADMSG;
	if (ftruncate(fd, (off_t)(start + (uint64_t)n)) < 0)
		return negative_errno();
	*size = start + (uint64_t)n;
	return 1;
}

static int open_log(struct qj_killlog *l)
{
	struct stat st;
	int r;

	/* O_NOFOLLOW and a directory only root can write: nobody redirects the writer. */
	/* Read too: a torn last line is found and cut at open (cut_torn_tail()). */
	l->fd = openat(l->dir_fd, l->base,
		       O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0640);
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
	r = cut_torn_tail(l->fd, &l->size);
	l->torn = r < 0;
	return 0;
}

/*
 * A restarted daemon (or one after a reboot, /run being gone) numbers cycles
 * on from the log: `qosjailctl log --cycle N` must not mix two cycles.  The
 * newest rotation counts too, for a log rotated just before the restart.
 */
static int read_highest_cycle(struct qj_killlog *l)
{
	_cleanup_free_ char *old = NULL;
	_cleanup_close_ int fd = -EBADF;
	struct stat st;
	uint64_t c = 0;
	int r;

	r = qj_killlog_last_cycle(l->fd, &l->highest_cycle);
	if (r < 0)
		return r;
	if (l->keep == 0)
		return 0;
	if (asprintf(&old, "%s.1", l->base) < 0)
		return -ENOMEM;
	/* Only a hint: a missing or odd rotation does not keep the daemon from starting. */
	fd = openat(l->dir_fd, old, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    qj_killlog_last_cycle(fd, &c) < 0)
		return 0;
	if (c > l->highest_cycle)
		l->highest_cycle = c;
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
	r = qj_open_dir_walked(dirname(dir), QJ_WALK_CREATE | QJ_WALK_PRIVATE, &l->dir_fd);
	if (r >= 0)
		r = open_log(l);
	if (r >= 0)
		r = read_highest_cycle(l);
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
	(void)qj_killlog_sync(l);
	if (l->fd >= 0)
		(void)close(l->fd);
	if (l->dir_fd >= 0)
		(void)close(l->dir_fd);
	free(l->path);
	free(l->base);
	free(l);
	return NULL;
}

uint64_t qj_killlog_highest_cycle(const struct qj_killlog *l)
{
	return l->highest_cycle;
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

static int sync_deferred(struct qj_killlog *l);

static int rotate(struct qj_killlog *l)
{
	size_t n = strlen(l->base) + 16;
	_cleanup_free_ char *from = malloc(n);
	_cleanup_free_ char *to = malloc(n);
	int r;

	if (!from || !to)
		return -ENOMEM;
	/* What waits for its fsync is synced before the file moves away. */
	r = sync_deferred(l);
	if (r < 0)
		return r;
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

/* Process names, executables and cgroup paths need not be UTF-8: escaped, never dropped. */
static json_t *str_or_null(const char *s)
{
	return qj_json_string_escaped(s);
}

/*
 * Writes @line (ending in a newline) as one record: rotates first when it would
 * not fit, reopens a log that a failed rotation left closed.  A write that fails
 * part-way (disk full) is cut back to where the record began, so the log never
 * holds a torn line and the next record is not glued to one.
 */
static int write_line(struct qj_killlog *l, const char *line, size_t len)
{
	struct stat st;
	int r;

	if (l->fd < 0) {
		r = open_log(l);
		if (r < 0)
			return r;
	}
	if (l->max_bytes > 0 && l->size > 0 && l->size + len > l->max_bytes) {
		r = rotate(l);
		if (r < 0)
			return r;
	}
	/* The true end: what an earlier failure or another appender left. */
	if (fstat(l->fd, &st) < 0)
		return negative_errno();
	l->size = (uint64_t)st.st_size;
	if (l->torn) {
		/* A cut that failed left a partial line: end it so this record stands alone. */
		if (write(l->fd, "\n", 1) < 0)
			return negative_errno();
		l->torn = false;
		l->size++;
	}
	/* One write: O_APPEND makes it atomic against other appenders and readers. */
	for (size_t off = 0; off < len;) {
		ssize_t n = write(l->fd, line + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? negative_errno() : -EIO;
			if (off > 0 && ftruncate(l->fd, (off_t)l->size) < 0)
				l->torn = true;
			return r;
		}
		off += (size_t)n;
	}
	if (l->deferring) {
		/* Written (a reader and a restarted daemon see it); qj_killlog_sync() fsyncs. */
		if (l->n_unsynced == 0 && l->unsynced_gap_lost == 0)
			l->unsynced_from = l->size;
		l->size += len;
		return 0;
	}
	if (fsync(l->fd) < 0) {
		/* Not known to be on disk: count it lost rather than trust it. */
		r = negative_errno();
		if (ftruncate(l->fd, (off_t)l->size) < 0)
			l->torn = true;
		return r;
	}
	l->size += len;
	return 0;
}

static void note_lost(struct qj_killlog *l, const char *ts, int error)
{
	l->lost++;
	if (l->unrecorded++ == 0)
		snprintf(l->first_lost_ts, sizeof(l->first_lost_ts), "%s", ts);
	snprintf(l->last_lost_ts, sizeof(l->last_lost_ts), "%s", ts);
	l->last_error = error;
}

/* The record of a gap, written before the first record that fits again. */
static int write_gap(struct qj_killlog *l, const char *ts)
{
	_cleanup_free_ char *line = NULL;
	json_t *o;
	size_t len;
	int r;

	o = json_pack("{s:s,s:s,s:I,s:s,s:s,s:s}", "ts", ts, "action", "gap", "lost",
		      (json_int_t)l->unrecorded, "first_ts", l->first_lost_ts, "last_ts",
		      l->last_lost_ts, "error",
		      strerrorname_np(-l->last_error) ? strerrorname_np(-l->last_error) : "?");
	if (!o)
		return -ENOMEM;
	line = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!line)
		return -ENOMEM;
	len = strlen(line);
	line[len++] = '\n'; /* json_dumps left room for the NUL we overwrite */
	r = write_line(l, line, len);
	if (r < 0)
		return r;
	if (l->deferring)
		l->unsynced_gap_lost += l->unrecorded; /* told only once it is synced */
	l->unrecorded = 0;
	return 0;
}

int qj_killlog_cycle_begin(struct qj_killlog *l, uint64_t cycle, uint64_t realtime_usec)
{
	int r = qj_format_rfc3339(realtime_usec, l->begin_ts, sizeof(l->begin_ts));

	l->begin_cycle = r < 0 ? 0 : cycle;
	return r < 0 ? r : 0;
}

/* A summary of the cycle noted by qj_killlog_cycle_begin() says when that cycle began. */
static int stamp_begin(struct qj_killlog *l, json_t *obj)
{
	json_t *c = json_object_get(obj, "cycle");
	const char *action = json_string_value(json_object_get(obj, "action"));

	if (!l->begin_cycle || !json_is_integer(c) ||
	    (uint64_t)json_integer_value(c) != l->begin_cycle || !action ||
	    strcmp(action, "summary") != 0 || json_object_get(obj, "begin_ts"))
		return 0;
	return json_object_set_new(obj, "begin_ts", json_string(l->begin_ts)) < 0 ? -ENOMEM : 0;
}

int qj_killlog_append_json(struct qj_killlog *l, json_t *obj)
{
	_cleanup_free_ char *line = NULL;
	const char *ts;
	size_t len;
	int r;

	if (!json_object_get(obj, "ts")) {
		char now_ts[32];
		struct timespec now;

		(void)clock_gettime(CLOCK_REALTIME, &now);
		r = qj_format_rfc3339(timespec_to_usec(&now), now_ts, sizeof(now_ts));
		if (r < 0)
			return r;
		if (json_object_set_new(obj, "ts", json_string(now_ts)) < 0)
			return -ENOMEM;
	}
	r = stamp_begin(l, obj);
	if (r < 0)
		return r;
	ts = json_string_value(json_object_get(obj, "ts"));
	line = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!line) {
		note_lost(l, ts ? ts : "", -ENOMEM);
		return -ENOMEM;
	}
	len = strlen(line);
	line[len++] = '\n'; /* json_dumps left room for the NUL we overwrite */

	r = l->unrecorded > 0 ? write_gap(l, ts ? ts : "") : 0;
	if (r >= 0)
		r = write_line(l, line, len);
	if (r < 0)
		note_lost(l, ts ? ts : "", r);
	else if (l->deferring) {
		if (l->n_unsynced++ == 0)
			snprintf(l->first_unsynced_ts, sizeof(l->first_unsynced_ts), "%s",
				 ts ? ts : "");
		snprintf(l->last_unsynced_ts, sizeof(l->last_unsynced_ts), "%s", ts ? ts : "");
	}
	return r;
}

/*
 * fsyncs the records written since the deferral began.  When that fails they
 * are not known to be on disk: cut back and counted lost (with the losses a
 * deferred gap record told), so the next record that fits is preceded by a gap.
 */
static int sync_deferred(struct qj_killlog *l)
{
	int r;

	if (l->n_unsynced == 0 && l->unsynced_gap_lost == 0)
		return 0;
	if (l->fd >= 0 && fsync(l->fd) == 0) {
		l->n_unsynced = 0;
		l->unsynced_gap_lost = 0;
		return 0;
	}
	r = l->fd >= 0 ? negative_errno() : -EBADF;
	if (l->fd >= 0 && ftruncate(l->fd, (off_t)l->unsynced_from) < 0)
		l->torn = true;
	else
		l->size = l->unsynced_from;
	if (l->unrecorded == 0 && l->unsynced_gap_lost == 0)
		snprintf(l->first_lost_ts, sizeof(l->first_lost_ts), "%s", l->first_unsynced_ts);
	snprintf(l->last_lost_ts, sizeof(l->last_lost_ts), "%s", l->last_unsynced_ts);
	l->lost += l->n_unsynced;
	l->unrecorded += l->n_unsynced + l->unsynced_gap_lost;
	l->last_error = r;
	l->n_unsynced = 0;
	l->unsynced_gap_lost = 0;
	return r;
}

void qj_killlog_defer_sync(struct qj_killlog *l)
{
	l->deferring = true;
}

int qj_killlog_sync(struct qj_killlog *l)
{
	l->deferring = false;
	return sync_deferred(l);
}

void qj_killlog_get_stats(const struct qj_killlog *l, struct qj_killlog_stats *ret)
{
	*ret = (struct qj_killlog_stats){
		.lost = l->lost,
		.unrecorded = l->unrecorded,
		.last_error = l->last_error,
	};
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
