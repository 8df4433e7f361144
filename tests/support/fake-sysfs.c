// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The fake /sys/power (see fake-sysfs.h).
 *
 * One thread runs the FUSE session with its own poll loop (the session's fd
 * plus an eventfd the test side uses to wake it), so every reply is sent from
 * that thread.  A blocked state write is a request left unanswered: the
 * handler stores it and returns.  It is answered later by settle(), in the
 * same thread, when the test released it, when the kernel forwarded a signal
 * of the writer (FUSE_INTERRUPT: libfuse calls on_interrupt()), or at stop.
 * on_interrupt() only sets a flag: libfuse may call it from inside
 * fuse_req_interrupt_func() with the request's lock held, where replying (and
 * so freeing the request) is not allowed.
 */
#define FUSE_USE_VERSION 34

#include <errno.h>
#include <fuse_lowlevel.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fake-sysfs.h"
#include "util.h"

#define FAKE_MAX_WRITES 64
#define FAKE_MAX_QUEUE 16

enum {
	INO_ROOT = FUSE_ROOT_ID,
	INO_POWER,
	INO_STATE,
	INO_COUNT,
};

static const char state_text[] = "freeze mem qos\n";

struct fake_sysfs {
	char dir[4096];
	struct fuse_session *se;
	pthread_t thread;
	bool thread_started;
	int wake_fd; /* eventfd: the test side wants the loop to look at the state */

	pthread_mutex_t lock;
	pthread_cond_t cond; /* broadcast when a write was answered or got blocked */
	/* All below guarded by lock. */
	enum fake_sysfs_mode mode;
	enum fake_sysfs_mode queue[FAKE_MAX_QUEUE];
	size_t n_queue;
	unsigned wakeup_count;
	unsigned wakeup_after_reads;

	fuse_req_t pending; /* the blocked state write, NULL when none */
	struct fake_sysfs_write pending_rec;
	size_t pending_size;
	bool pending_interrupted;
	bool pending_released;
	bool stopping;

	struct fake_sysfs_write writes[FAKE_MAX_WRITES];
	size_t n_writes; /* may exceed FAKE_MAX_WRITES: those are counted, not kept */
};

static uint64_t mono_usec(void)
{
	return now_usec(CLOCK_MONOTONIC);
}

static void wake_loop(struct fake_sysfs *f)
{
	uint64_t one = 1;

	(void)!write(f->wake_fd, &one, sizeof(one));
}

/* Under lock. */
static void record(struct fake_sysfs *f, const struct fake_sysfs_write *w)
{
	if (f->n_writes < FAKE_MAX_WRITES)
		f->writes[f->n_writes] = *w;
	f->n_writes++;
	pthread_cond_broadcast(&f->cond);
}

static int fill_stat(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	switch (ino) {
	case INO_ROOT:
	case INO_POWER:
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	case INO_STATE:
	case INO_COUNT:
		st->st_mode = S_IFREG | 0644;
		st->st_nlink = 1;
		st->st_size = 4096; /* what sysfs reports for every attribute */
		return 0;
	default:
		return -ENOENT;
	}
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e = { .attr_timeout = 1.0, .entry_timeout = 1.0 };

	if (parent == INO_ROOT && strcmp(name, "power") == 0)
		e.ino = INO_POWER;
	else if (parent == INO_POWER && strcmp(name, "state") == 0)
		e.ino = INO_STATE;
	else if (parent == INO_POWER && strcmp(name, "wakeup_count") == 0)
		e.ino = INO_COUNT;
	else {
		fuse_reply_err(req, ENOENT);
		return;
	}
	(void)fill_stat(e.ino, &e.attr);
	fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	if (fill_stat(ino, &st) < 0)
		fuse_reply_err(req, ENOENT);
	else
		fuse_reply_attr(req, &st, 1.0);
}

/* O_TRUNC (a shell's "echo qos >state") arrives as a size change: ignored, like sysfs. */
static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	op_getattr(req, ino, fi);
}

static void dir_add(fuse_req_t req, char *buf, size_t size, size_t *n, const char *name,
		    fuse_ino_t ino)
{
	struct stat st = { .st_ino = ino };
	size_t k = fuse_add_direntry(req, NULL, 0, name, NULL, 0);

	if (*n + k > size)
		return;
	(void)fill_stat(ino, &st);
	*n += fuse_add_direntry(req, buf + *n, size - *n, name, &st, (off_t)(*n + k));
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	char buf[512];
	size_t n = 0;

	if (ino != INO_ROOT && ino != INO_POWER) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	dir_add(req, buf, sizeof(buf), &n, ".", ino);
	dir_add(req, buf, sizeof(buf), &n, "..", INO_ROOT);
	if (ino == INO_ROOT) {
		dir_add(req, buf, sizeof(buf), &n, "power", INO_POWER);
	} else {
		dir_add(req, buf, sizeof(buf), &n, "state", INO_STATE);
		dir_add(req, buf, sizeof(buf), &n, "wakeup_count", INO_COUNT);
	}
	if ((size_t)off >= n)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, buf + off, n - (size_t)off < size ? n - (size_t)off : size);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != INO_STATE && ino != INO_COUNT) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	/* Every read and write reaches the fake, none is served from the page cache. */
	fi->direct_io = 1;
	fi->keep_cache = 0;
	fuse_reply_open(req, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fake_sysfs *f = fuse_req_userdata(req);
	char text[32];
	size_t n;

	if (ino == INO_STATE) {
		snprintf(text, sizeof(text), "%s", state_text);
	} else {
		pthread_mutex_lock(&f->lock);
		snprintf(text, sizeof(text), "%u\n", f->wakeup_count);
		/* A wakeup event right after this read was answered. */
		if (off == 0 && f->wakeup_after_reads > 0 && --f->wakeup_after_reads == 0)
			f->wakeup_count++;
		pthread_mutex_unlock(&f->lock);
	}
	n = strlen(text);
	if ((size_t)off >= n)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, text + off, n - (size_t)off < size ? n - (size_t)off : size);
}

static void on_interrupt(fuse_req_t req, void *data)
{
	struct fake_sysfs *f = data;

	pthread_mutex_lock(&f->lock);
	if (f->pending == req)
		f->pending_interrupted = true;
	pthread_mutex_unlock(&f->lock);
	/* settle() runs after the current request was processed, in this thread. */
}

/* Answers the blocked write if the test released it, its writer was signalled, or at stop. */
static void settle(struct fake_sysfs *f)
{
	fuse_req_t req = NULL;
	size_t size = 0;
	int result = 0;

	pthread_mutex_lock(&f->lock);
	if (f->pending && (f->pending_interrupted || f->pending_released || f->stopping)) {
		req = f->pending;
		size = f->pending_size;
		result = f->pending_interrupted ? -EINTR : f->pending_released ? 0 : -EIO;
		f->pending_rec.result = result;
		f->pending_rec.end_usec = mono_usec();
		record(f, &f->pending_rec);
		f->pending = NULL;
	}
	pthread_mutex_unlock(&f->lock);
	if (!req)
		return;
	if (result < 0)
		fuse_reply_err(req, -result);
	else
		fuse_reply_write(req, size);
}

static bool is_state_word(const char *s)
{
	return strcmp(s, "qos") == 0 || strcmp(s, "mem") == 0 || strcmp(s, "freeze") == 0;
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct fake_sysfs *f = fuse_req_userdata(req);
	struct fake_sysfs_write w = { .start_usec = mono_usec() };
	enum fake_sysfs_mode mode;
	size_t n = size;
	int result = 0;

	if (ino != INO_STATE && ino != INO_COUNT) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	/* Like sysfs attribute stores: one buffer, a trailing newline is ignored. */
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	snprintf(w.file, sizeof(w.file), "%s", ino == INO_STATE ? "state" : "wakeup_count");
	snprintf(w.text, sizeof(w.text), "%.*s", (int)(n < sizeof(w.text) ? n : sizeof(w.text) - 1),
		 buf);

	pthread_mutex_lock(&f->lock);
	if (ino == INO_COUNT) {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(w.text, &end, 10);
		/* The kernel: EINVAL when unparsable or when wakeup events happened since. */
		if (errno || end == w.text || *end || v != f->wakeup_count)
			result = -EINVAL;
	} else if (!is_state_word(w.text)) {
		result = -EINVAL;
	} else {
		mode = f->mode;
		if (f->n_queue > 0) {
			mode = f->queue[0];
			memmove(f->queue, f->queue + 1, --f->n_queue * sizeof(f->queue[0]));
		}
		if (mode == FAKE_SYSFS_ERANGE) {
			result = -ERANGE;
		} else if (mode == FAKE_SYSFS_BLOCK && f->pending) {
			result = -EDEADLK; /* the fake blocks one writer at a time */
		} else if (mode == FAKE_SYSFS_BLOCK) {
			f->pending = req;
			f->pending_rec = w;
			f->pending_size = size;
			f->pending_interrupted = false;
			f->pending_released = false;
			pthread_cond_broadcast(&f->cond);
			pthread_mutex_unlock(&f->lock);
			/*
			 * Only this thread replies (settle() runs after this handler), so the
			 * request stays valid here even if the test releases it meanwhile.
			 * If the interrupt came first, on_interrupt() runs from in here.
			 */
			fuse_req_interrupt_func(req, on_interrupt, f);
			return; /* answered by settle() */
		}
	}
	w.result = result;
	w.end_usec = mono_usec();
	record(f, &w);
	pthread_mutex_unlock(&f->lock);
	if (result < 0)
		fuse_reply_err(req, -result);
	else
		fuse_reply_write(req, size);
}

static const struct fuse_lowlevel_ops fake_ops = {
	.lookup = op_lookup,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readdir = op_readdir,
	.open = op_open,
	.read = op_read,
	.write = op_write,
};

static void *loop_main(void *arg)
{
	struct fake_sysfs *f = arg;
	struct fuse_buf fbuf = { .mem = NULL };
	struct pollfd p[2] = {
		{ .fd = fuse_session_fd(f->se), .events = POLLIN },
		{ .fd = f->wake_fd, .events = POLLIN },
	};
	bool stop = false;

	while (!stop) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents & POLLIN) {
			uint64_t v;

			(void)!read(f->wake_fd, &v, sizeof(v));
		}
		pthread_mutex_lock(&f->lock);
		stop = f->stopping;
		pthread_mutex_unlock(&f->lock);
		if (!stop && (p[0].revents & POLLIN)) {
			int r = fuse_session_receive_buf(f->se, &fbuf);

			if (r == -EINTR || r == -EAGAIN)
				continue;
			if (r <= 0 || fuse_session_exited(f->se))
				break; /* unmounted (ENODEV) or broken */
			fuse_session_process_buf(f->se, &fbuf);
		} else if (p[0].revents & (POLLERR | POLLHUP)) {
			break;
		}
		settle(f);
	}
	/* Nobody must stay blocked in a write to a fake that no longer answers. */
	pthread_mutex_lock(&f->lock);
	f->stopping = true;
	pthread_mutex_unlock(&f->lock);
	settle(f);
	free(fbuf.mem);
	return NULL;
}

bool fake_sysfs_mounted(const char *dir)
{
	_cleanup_fclose_ FILE *m = fopen("/proc/self/mounts", "re");
	char line[8192];

	if (!m)
		return false;
	while (fgets(line, sizeof(line), m)) {
		char *mp = strchr(line, ' '), *end;

		if (!mp)
			continue;
		mp++;
		end = strchr(mp, ' ');
		if (end && (size_t)(end - mp) == strlen(dir) && strncmp(mp, dir, strlen(dir)) == 0)
			return true;
	}
	return false;
}

int fake_sysfs_start(const char *dir, struct fake_sysfs **ret)
{
	char *argv[] = { "qj-fake-sysfs", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(1, argv);
	struct fake_sysfs *f;
	int r;

	if (strlen(dir) >= sizeof(f->dir))
		return -ENAMETOOLONG;
	if (access("/dev/fuse", R_OK | W_OK) < 0)
		return -errno;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	snprintf(f->dir, sizeof(f->dir), "%s", dir);
	f->mode = FAKE_SYSFS_SUSPEND;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	f->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (f->wake_fd < 0) {
		r = -errno;
		goto err_free;
	}
	f->se = fuse_session_new(&args, &fake_ops, sizeof(fake_ops), f);
	fuse_opt_free_args(&args); /* parsing may have copied them */
	if (!f->se) {
		r = -EIO;
		goto err_close;
	}
	if (fuse_session_mount(f->se, dir) != 0) {
		r = -EIO;
		goto err_session;
	}
	r = -pthread_create(&f->thread, NULL, loop_main, f);
	if (r < 0)
		goto err_unmount;
	f->thread_started = true;
	*ret = f;
	return 0;

err_unmount:
	fuse_session_unmount(f->se);
err_session:
	fuse_session_destroy(f->se);
err_close:
	close(f->wake_fd);
err_free:
	pthread_mutex_destroy(&f->lock);
	pthread_cond_destroy(&f->cond);
	free(f);
	return r;
}

int fake_sysfs_stop(struct fake_sysfs *f)
{
	int r = 0;

	if (!f)
		return 0;
	if (f->thread_started) {
		pthread_mutex_lock(&f->lock);
		f->stopping = true;
		pthread_mutex_unlock(&f->lock);
		wake_loop(f);
		pthread_join(f->thread, NULL);
	}
	/*
	 * Closes /dev/fuse first, which aborts the connection (whatever still uses
	 * the mount gets ENOTCONN instead of hanging), then detaches the mount.
	 */
	fuse_session_unmount(f->se);
	fuse_session_destroy(f->se);
	if (fake_sysfs_mounted(f->dir)) {
		(void)umount2(f->dir, MNT_DETACH | UMOUNT_NOFOLLOW);
		r = -EBUSY;
	}
	close(f->wake_fd);
	pthread_mutex_destroy(&f->lock);
	pthread_cond_destroy(&f->cond);
	free(f);
	return r;
}

void fake_sysfs_set_state_mode(struct fake_sysfs *f, enum fake_sysfs_mode mode)
{
	pthread_mutex_lock(&f->lock);
	f->mode = mode;
	pthread_mutex_unlock(&f->lock);
}

int fake_sysfs_queue_state(struct fake_sysfs *f, enum fake_sysfs_mode mode)
{
	int r = 0;

	pthread_mutex_lock(&f->lock);
	if (f->n_queue >= FAKE_MAX_QUEUE)
		r = -ENOSPC;
	else
		f->queue[f->n_queue++] = mode;
	pthread_mutex_unlock(&f->lock);
	return r;
}

int fake_sysfs_release_blocked(struct fake_sysfs *f)
{
	int r = 0;

	pthread_mutex_lock(&f->lock);
	if (!f->pending)
		r = -ENOENT;
	else
		f->pending_released = true;
	pthread_mutex_unlock(&f->lock);
	if (r == 0)
		wake_loop(f);
	return r;
}

/* Waits on cond until @done(f) or @timeout_ms passed; under lock. */
static bool wait_until(struct fake_sysfs *f, bool (*done)(struct fake_sysfs *, size_t), size_t n,
		       int timeout_ms)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	while (!done(f, n))
		if (pthread_cond_timedwait(&f->cond, &f->lock, &ts) == ETIMEDOUT)
			return done(f, n);
	return true;
}

static bool is_blocked(struct fake_sysfs *f, size_t unused)
{
	return f->pending != NULL;
}

static bool has_writes(struct fake_sysfs *f, size_t n)
{
	return f->n_writes >= n;
}

int fake_sysfs_wait_blocked(struct fake_sysfs *f, int timeout_ms)
{
	bool ok;

	pthread_mutex_lock(&f->lock);
	ok = wait_until(f, is_blocked, 0, timeout_ms);
	pthread_mutex_unlock(&f->lock);
	return ok ? 0 : -ETIMEDOUT;
}

int fake_sysfs_wait_writes(struct fake_sysfs *f, size_t n, int timeout_ms)
{
	size_t k;
	bool ok;

	pthread_mutex_lock(&f->lock);
	ok = wait_until(f, has_writes, n, timeout_ms);
	k = f->n_writes;
	pthread_mutex_unlock(&f->lock);
	return ok ? (int)k : -ETIMEDOUT;
}

void fake_sysfs_set_wakeup_count(struct fake_sysfs *f, unsigned count)
{
	pthread_mutex_lock(&f->lock);
	f->wakeup_count = count;
	pthread_mutex_unlock(&f->lock);
}

void fake_sysfs_wakeup_after_reads(struct fake_sysfs *f, unsigned n)
{
	pthread_mutex_lock(&f->lock);
	f->wakeup_after_reads = n;
	pthread_mutex_unlock(&f->lock);
}

size_t fake_sysfs_n_writes(struct fake_sysfs *f)
{
	size_t n;

	pthread_mutex_lock(&f->lock);
	n = f->n_writes;
	pthread_mutex_unlock(&f->lock);
	return n;
}

int fake_sysfs_write_at(struct fake_sysfs *f, size_t i, struct fake_sysfs_write *ret)
{
	int r = -ENOENT;

	pthread_mutex_lock(&f->lock);
	if (i < f->n_writes && i < FAKE_MAX_WRITES) {
		*ret = f->writes[i];
		r = 0;
	}
	pthread_mutex_unlock(&f->lock);
	return r;
}

int fake_sysfs_writes(struct fake_sysfs *f, char *buf, size_t size)
{
	size_t n = 0, count;

	if (size == 0)
		return -EINVAL;
	buf[0] = '\0';
	pthread_mutex_lock(&f->lock);
	count = f->n_writes;
	for (size_t i = 0; i < count && i < FAKE_MAX_WRITES && n < size; i++) {
		const struct fake_sysfs_write *w = &f->writes[i];
		const char *res = w->result == 0 ? "OK" : strerrorname_np(-w->result);

		n += (size_t)snprintf(buf + n, size - n, "%s%s%s%s:%s", i ? "," : "",
				      strcmp(w->file, "state") == 0 ? "" : w->file,
				      strcmp(w->file, "state") == 0 ? "" : "=", w->text,
				      res ? res : "?");
	}
	pthread_mutex_unlock(&f->lock);
	return (int)count;
}
