// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Test app: a private FUSE server (libfuse3 low-level API, root) with one file, "data"
 * (64 KiB of 'x'), mounted on DIR.
 *
 *   qj-fuseserver DIR hold|serve
 *
 * hold: a read is never answered until SIGUSR1 (then every held read, and all later
 * ones, are answered): the server a reader waits on for as long as the test wants.
 * serve: reads are answered at once.  Prints "ready" once mounted, "read" for every
 * read request it receives.  SIGTERM answers what is held, unmounts and exits.
 */
#define FUSE_USE_VERSION 34

#include <errno.h>
#include <fuse_lowlevel.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_SIZE 65536
#define MAX_HELD 64

enum { INO_ROOT = FUSE_ROOT_ID, INO_DATA };

static bool holding;
static fuse_req_t held[MAX_HELD];
static size_t held_size[MAX_HELD];
static size_t n_held;

static void fill_stat(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino == INO_ROOT) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0644;
		st->st_nlink = 1;
		st->st_size = FILE_SIZE;
	}
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e = { .ino = INO_DATA, .attr_timeout = 1, .entry_timeout = 1 };

	if (parent != INO_ROOT || strcmp(name, "data") != 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_stat(INO_DATA, &e.attr);
	fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (ino != INO_ROOT && ino != INO_DATA) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_stat(ino, &st);
	fuse_reply_attr(req, &st, 1);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != INO_DATA) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	fi->keep_cache = 0; /* every open reads from the server again */
	fuse_reply_open(req, fi);
}

static void answer(fuse_req_t req, size_t size, off_t off)
{
	static char buf[FILE_SIZE];

	if (!buf[0])
		memset(buf, 'x', sizeof(buf));
	if (off >= FILE_SIZE) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > (size_t)(FILE_SIZE - off))
		size = (size_t)(FILE_SIZE - off);
	fuse_reply_buf(req, buf + off, size);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	printf("read\n");
	fflush(stdout);
	if (holding && n_held < MAX_HELD) {
		held[n_held] = req;
		held_size[n_held++] = size;
		return;
	}
	answer(req, size, off);
}

static void release_all(void)
{
	holding = false;
	for (size_t i = 0; i < n_held; i++)
		answer(held[i], held_size[i], 0);
	n_held = 0;
}

static const struct fuse_lowlevel_ops ops = {
	.lookup = op_lookup,
	.getattr = op_getattr,
	.open = op_open,
	.read = op_read,
};

int main(int argc, char **argv)
{
	char *fargv[] = { argv[0], NULL };
	struct fuse_args args = FUSE_ARGS_INIT(1, fargv);
	struct fuse_buf fbuf = { .mem = NULL };
	struct fuse_session *se;
	struct pollfd p[2];
	sigset_t ss;

	if (argc != 3 || (strcmp(argv[2], "hold") != 0 && strcmp(argv[2], "serve") != 0)) {
		fprintf(stderr, "usage: qj-fuseserver DIR hold|serve\n");
		return 2;
	}
	holding = strcmp(argv[2], "hold") == 0;
	sigemptyset(&ss);
	sigaddset(&ss, SIGUSR1);
	sigaddset(&ss, SIGTERM);
	sigprocmask(SIG_BLOCK, &ss, NULL);
	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	fuse_opt_free_args(&args); /* parsing may have copied them */
	if (!se || fuse_session_mount(se, argv[1]) != 0) {
		fprintf(stderr, "qj-fuseserver: cannot mount %s\n", argv[1]);
		return 1;
	}
	p[0] = (struct pollfd){ .fd = fuse_session_fd(se), .events = POLLIN };
	p[1] = (struct pollfd){ .fd = signalfd(-1, &ss, SFD_CLOEXEC), .events = POLLIN };
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(p[1].fd, &si, sizeof(si)) == sizeof(si) && si.ssi_signo == SIGTERM)
				break;
			release_all();
		}
		if (p[0].revents & POLLIN) {
			int r = fuse_session_receive_buf(se, &fbuf);

			if (r == -EINTR || r == -EAGAIN)
				continue;
			if (r <= 0 || fuse_session_exited(se))
				break;
			fuse_session_process_buf(se, &fbuf);
		} else if (p[0].revents & (POLLERR | POLLHUP)) {
			break;
		}
	}
	release_all();
	free(fbuf.mem);
	fuse_session_unmount(se);
	fuse_session_destroy(se);
	return 0;
}
