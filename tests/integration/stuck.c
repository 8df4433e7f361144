// SPDX-License-Identifier: LGPL-2.1-or-later
/* The mmap_lock attacker and raw socket helpers (see stuck.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon-harness.h"
#include "stuck.h"

/* Generous: setting up the attacker on a loaded machine; no test passes on this. */
#define SETUP_MS 30000

pid_t stuck_spawn(const char *name, char **argv, int *ret_in, int *ret_out)
{
	char exe[512];
	int in[2], out[2];
	pid_t pid;

	snprintf(exe, sizeof(exe), "%s/tests/apps/qj-%s", getenv("QJ_BUILD_DIR"), name);
	argv[0] = exe;
	if (pipe2(in, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(out, O_CLOEXEC) < 0) {
		close(in[0]);
		close(in[1]);
		return -errno;
	}
	pid = fork();
	if (pid == 0) {
		dup2(in[0], STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		execv(exe, argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	if (pid < 0) {
		close(in[1]);
		close(out[0]);
		return -errno;
	}
	harness_track(pid);
	*ret_in = in[1];
	*ret_out = out[0];
	return pid;
}

bool stuck_wait_line(int fd, const char *prefix, char *line, size_t size, int timeout_ms)
{
	char buf[256];
	size_t n = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char c;

		if (poll(&p, 1, timeout_ms) <= 0 || read(fd, &c, 1) != 1)
			return false;
		if (c != '\n') {
			if (n < sizeof(buf) - 1)
				buf[n++] = c;
			continue;
		}
		buf[n] = '\0';
		n = 0;
		if (strncmp(buf, prefix, strlen(prefix)) == 0) {
			if (line)
				snprintf(line, size, "%s", buf);
			return true;
		}
	}
}

int stuck_server_start(struct stuck *s, const char *mode)
{
	char *argv[] = { NULL, s->mnt, (char *)mode, NULL };
	int in;

	*s = (struct stuck){ .server_out = -1, .app_in = -1, .app_out = -1 };
	snprintf(s->dir, sizeof(s->dir), "/tmp/qjstuck-XXXXXX");
	if (!mkdtemp(s->dir))
		return -errno;
	snprintf(s->mnt, sizeof(s->mnt), "%s/mnt", s->dir);
	snprintf(s->data, sizeof(s->data), "%s/data", s->mnt);
	if (mkdir(s->mnt, 0755) < 0)
		return -errno;
	s->server = stuck_spawn("fuseserver", argv, &in, &s->server_out);
	if (s->server < 0)
		return s->server;
	close(in);
	return stuck_wait_line(s->server_out, "ready", NULL, 0, SETUP_MS) ? 0 : -ETIMEDOUT;
}

static char thread_state(pid_t pid, pid_t tid)
{
	char path[96], buf[512];
	const char *close_paren;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return '?';
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	close_paren = strrchr(buf, ')');
	return close_paren && close_paren[1] ? close_paren[2] : '?';
}

int stuck_app_spawn(struct stuck *s, const char *extra)
{
	char *argv[] = { NULL, s->data, (char *)extra, NULL };

	s->app = stuck_spawn("mmaplock", argv, &s->app_in, &s->app_out);
	if (s->app < 0)
		return s->app;
	if (!stuck_wait_line(s->app_out, "ready", NULL, 0, SETUP_MS) ||
	    !stuck_wait_line(s->server_out, "read", NULL, 0, SETUP_MS))
		return -ETIMEDOUT; /* the reader's FUSE read is now held by the server */
	return 0;
}

int stuck_app_start(struct stuck *s, const char *extra)
{
	int r = stuck_app_spawn(s, extra);

	return r < 0 ? r : stuck_app_lock(s);
}

int stuck_app_lock(struct stuck *s)
{
	char line[64];

	if (write(s->app_in, "go\n", 3) != 3 ||
	    !stuck_wait_line(s->app_out, "locking ", line, sizeof(line), SETUP_MS))
		return -EIO;
	s->locker = (pid_t)atoi(line + strlen("locking "));
	for (int i = 0; i < SETUP_MS / 10; i++) {
		if (thread_state(s->app, s->locker) == 'D')
			return 0;
		msleep(10);
	}
	return -ETIMEDOUT;
}

bool stuck_still(const struct stuck *s)
{
	return !s->released && thread_state(s->app, s->locker) == 'D';
}

void stuck_release(struct stuck *s)
{
	if (s->server > 0 && !s->released)
		(void)kill(s->server, SIGUSR1);
	s->released = true;
}

void stuck_cleanup(struct stuck *s)
{
	if (!s || !s->dir[0])
		return;
	stuck_release(s);
	if (s->app > 0) {
		(void)kill(s->app, SIGKILL);
		(void)waitpid(s->app, NULL, 0);
	}
	if (s->server > 0) {
		(void)kill(s->server, SIGTERM);
		(void)waitpid(s->server, NULL, 0);
	}
	(void)umount2(s->mnt, MNT_DETACH | UMOUNT_NOFOLLOW);
	(void)rmdir(s->mnt);
	(void)rmdir(s->dir);
	for (int *fd = (int[]){ s->server_out, s->app_in, s->app_out }, *end = fd + 3; fd < end;
	     fd++)
		if (*fd >= 0)
			close(*fd);
	*s = (struct stuck){ .server_out = -1, .app_in = -1, .app_out = -1 };
}

int stuck_send(int fd, const char *req)
{
	return send(fd, req, strlen(req), MSG_NOSIGNAL) < 0 ? -errno : 0;
}

char *stuck_recv(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char *buf;
	ssize_t n;

	if (poll(&p, 1, timeout_ms) <= 0)
		return NULL;
	buf = malloc(70000);
	if (!buf)
		return NULL;
	n = recv(fd, buf, 69999, MSG_DONTWAIT);
	if (n <= 0) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

int stuck_client(const char *socket)
{
	int fd = raw_connect(socket);
	char *r;

	if (fd < 0)
		return fd;
	if (stuck_send(fd, "{\"op\":\"hello\",\"version\":1}") < 0 ||
	    !(r = stuck_recv(fd, SETUP_MS))) {
		close(fd);
		return -EIO;
	}
	free(r);
	return fd;
}
