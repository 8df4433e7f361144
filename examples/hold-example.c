// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * hold-example: keep the system awake while doing some work, the way a
 * download manager or a media player would use libqosjail.
 *
 *   cc hold-example.c $(pkg-config --cflags --libs qosjail) -o hold-example
 *   ./hold-example [SECONDS]
 */
#include <qosjail.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	unsigned seconds = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 3;
	struct qj_conn *conn = NULL;
	char *status = NULL;
	int r;

	r = qj_open(NULL, &conn); /* $QOSJAIL_SOCKET or /run/qosjail/qosjail.sock */
	if (r < 0) {
		fprintf(stderr, "cannot reach qosjaild: %s\n", strerror(-r));
		return 1;
	}
	/* A lease: even if we hang, the hold ends a minute after we took it. */
	r = qj_hold(conn, "example-work", "hold-example doing some work", 60ULL * 1000000, 0);
	if (r < 0) {
		fprintf(stderr, "hold refused: %s: %s\n", strerror(-r), qj_last_error(conn));
		qj_close(conn);
		return 1;
	}
	if (qj_status(conn, &status) == 0) {
		printf("holding; daemon says: %s\n", status);
		free(status);
	}
	sleep(seconds); /* the work */
	r = qj_release(conn, "example-work");
	if (r < 0)
		fprintf(stderr, "release: %s\n", strerror(-r));
	qj_close(conn); /* would have released it anyway */
	return r < 0;
}
