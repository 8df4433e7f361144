// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The user's compositor in the Debian guest, as far as the idle hint goes (guest-check):
 * run by qj-compositor.service (User=alice, PAMName=login, XDG_SESSION_TYPE=wayland, as
 * Phosh's phosh.service runs it), so logind gives it a graphical session of its own.  It
 * keeps one system-bus connection for its whole life, as a compositor does, and each
 * line ("true" or "false") written to the FIFO @argv[1] becomes logind's
 * Session.SetIdleHint on its own session; the outcome goes to stdout (the journal).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *id = getenv("XDG_SESSION_ID"); /* pam_systemd's, through PAMName= */
	const char *name = NULL;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	char line[32], *path = NULL;
	sd_bus *bus = NULL;
	FILE *f;
	int fd, r;

	if (argc != 2) {
		fprintf(stderr, "usage: qj-idle-hint FIFO\n");
		return 2;
	}
	/*
	 * Connected now, not at the first call: the bus daemon drops a connection that has
	 * not finished its authentication within its auth_timeout, and the check's first
	 * line may come minutes later.
	 */
	r = sd_bus_open_system(&bus);
	if (r >= 0)
		r = sd_bus_get_unique_name(bus, &name);
	if (r >= 0)
		r = id ? sd_bus_path_encode("/org/freedesktop/login1/session", id, &path) :
			 ((path = strdup("/org/freedesktop/login1/session/auto")) ? 0 : -ENOMEM);
	if (r < 0) {
		fprintf(stderr, "qj-idle-hint: system bus: %s\n", strerror(-r));
		return 1;
	}
	(void)unlink(argv[1]);
	/* Read and write: no end of file when the check's writer closes its end. */
	if (mkfifo(argv[1], 0600) < 0 || (fd = open(argv[1], O_RDWR | O_CLOEXEC)) < 0 ||
	    !(f = fdopen(fd, "r"))) {
		fprintf(stderr, "qj-idle-hint: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	printf("qj-idle-hint: ready on %s for %s as %s\n", argv[1], path, name);
	fflush(stdout);
	while (fgets(line, sizeof(line), f)) {
		int idle = strncmp(line, "true", 4) == 0;

		r = sd_bus_call_method(bus, "org.freedesktop.login1", path,
				       "org.freedesktop.login1.Session", "SetIdleHint", &e, NULL,
				       "b", idle);
		printf("qj-idle-hint: SetIdleHint(%s): %s\n", idle ? "true" : "false",
		       r < 0 ? (e.message ? e.message : strerror(-r)) : "ok");
		fflush(stdout);
		sd_bus_error_free(&e);
	}
	return 0;
}
