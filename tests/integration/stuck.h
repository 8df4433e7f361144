/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The attacker of issue 25 finding 1, for integration tests: a private FUSE server
 * (tests/apps/qj-fuseserver, "hold": reads wait until released) and a process
 * (tests/apps/qj-mmaplock) with one thread in pread(/proc/self/mem) of a mapping of
 * that server's file and another queued for its mmap write lock, so that every read
 * of its /proc/PID/cmdline waits for the server.  Also the raw socket helpers the
 * tests need to send a request without waiting for its answer.
 */
#ifndef QJ_TEST_STUCK_H
#define QJ_TEST_STUCK_H

#include <stdbool.h>
#include <sys/types.h>

struct stuck {
	char dir[64]; /* temporary directory; the mount is dir/mnt */
	char mnt[80];
	char data[96]; /* the FUSE file */
	pid_t server;
	int server_out; /* its stdout: "ready", then "read" for every read request */
	pid_t app;
	int app_in, app_out;
	pid_t locker; /* the app's thread queued for the write lock */
	bool released;
};

/* Starts tests/apps/qj-@name with @argv (argv[0] filled in), stdin and stdout piped. */
pid_t stuck_spawn(const char *name, char **argv, int *ret_in, int *ret_out);
/* Reads lines from @fd until one starts with @prefix (copied to @line); false on timeout. */
bool stuck_wait_line(int fd, const char *prefix, char *line, size_t size, int timeout_ms);
/* The FUSE server in hold mode on a fresh mount.  0 or negative errno. */
int stuck_server_start(struct stuck *s, const char *mode);
/*
 * qj-mmaplock on the server's file with @extra as its last argument (NULL: none), and
 * waits until its lock is stuck: the reader's FUSE read arrived and the locker sleeps.
 */
int stuck_app_start(struct stuck *s, const char *extra);
/* The two halves of stuck_app_start(): spawned with its reader waiting, then the lock. */
int stuck_app_spawn(struct stuck *s, const char *extra);
int stuck_app_lock(struct stuck *s);
/* The app's lock is still stuck: the server has not been released, the locker waits. */
bool stuck_still(const struct stuck *s);
/* Lets the server answer (the read returns, the lock frees). */
void stuck_release(struct stuck *s);
/* Kills the app and the server, unmounts and removes the directory.  NULL is fine. */
void stuck_cleanup(struct stuck *s);

/* A raw client of @socket that said hello; negative errno. */
int stuck_client(const char *socket);
/* Sends @req on @fd; 0 or negative errno. */
int stuck_send(int fd, const char *req);
/* The next message on @fd within @timeout_ms (malloc()ed), NULL on timeout or EOF. */
char *stuck_recv(int fd, int timeout_ms);

#endif
