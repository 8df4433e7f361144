// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Test app: a private FUSE server that never answers a read.  Mounts itself on
 * $QJ_FUSE_DIR (as root: no fusermount) with one file, "stuck"; lookups,
 * getattr and open are answered, every read is kept and left unanswered, and
 * interrupts are ignored, so a reader stays in the kernel for as long as the
 * server lives: interrupted once by a signal it waits killable, in 'D'.  Exits
 * on SIGTERM (or when unmounted); the kernel then fails the pending reads.
 */
#define FUSE_USE_VERSION 34

#include <errno.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define INO_FILE 2
#define FILE_SIZE 4096

static int stat_of(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	if (ino == INO_FILE) {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = FILE_SIZE;
		return 0;
	}
	return -ENOENT;
}

static void on_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e = { .ino = INO_FILE };

	if (parent != FUSE_ROOT_ID || strcmp(name, "stuck") != 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	(void)stat_of(INO_FILE, &e.attr);
	fuse_reply_entry(req, &e);
}

static void on_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (stat_of(ino, &st) < 0)
		fuse_reply_err(req, ENOENT);
	else
		fuse_reply_attr(req, &st, 0);
}

static void on_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != INO_FILE) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	fi->direct_io = 1; /* every read reaches us, none is served from the page cache */
	fuse_reply_open(req, fi);
}

static void on_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	/* Never answered: the request stays with the kernel's reader. */
	(void)req;
	(void)ino;
	(void)size;
	(void)off;
	(void)fi;
}

static const struct fuse_lowlevel_ops ops = {
	.lookup = on_lookup,
	.getattr = on_getattr,
	.open = on_open,
	.read = on_read,
};

int main(void)
{
	char *argv[] = { "qj-fusehang", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(1, argv);
	const char *dir = getenv("QJ_FUSE_DIR");
	struct fuse_session *se;
	int r;

	if (!dir)
		return 2;
	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se || fuse_set_signal_handlers(se) < 0 || fuse_session_mount(se, dir) < 0)
		return 1;
	printf("ready\n");
	fflush(stdout);
	r = fuse_session_loop(se);
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	return r < 0 ? 1 : 0;
}
