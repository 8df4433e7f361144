// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Test app: takes a lock on FILE and keeps it.
 *
 *   qj-locker FILE flock|fcntl busy|idle
 *
 * flock: flock(2) LOCK_EX; fcntl: a POSIX write lock (F_SETLKW) on the whole file.
 * Prints "ready" once the lock is held, then spins (busy: a quiesce stops it) or sleeps.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int fd;

	if (argc != 4) {
		fprintf(stderr, "usage: qj-locker FILE flock|fcntl busy|idle\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 ||
	    (strcmp(argv[2], "flock") == 0 ? flock(fd, LOCK_EX) : fcntl(fd, F_SETLKW, &fl)) < 0) {
		perror(argv[1]);
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	if (strcmp(argv[3], "busy") == 0)
		for (volatile unsigned long n = 0;; n++)
			;
	for (;;)
		pause();
}
