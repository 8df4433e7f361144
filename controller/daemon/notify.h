/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The service manager's readiness protocol (sd_notify, Type=notify): READY=1 once the
 * socket listens and the jail is set up, STATUS= on every change of the cycle's state or
 * hold count, STOPPING=1 when an exit begins.  Without $NOTIFY_SOCKET each call is a no-op.
 */
#ifndef QJ_NOTIFY_H
#define QJ_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>

struct qj_cycle;

struct qj_notify {
	bool enabled; /* $NOTIFY_SOCKET was set at start */
	char last_status[128]; /* the STATUS= text last sent, so unchanged ones are not resent */
};

/* The one-line status for @c with @n_holds holds into @buf; returns @buf. */
const char *qj_notify_format_status(const struct qj_cycle *c, size_t n_holds, char *buf,
				    size_t size);
/* Reads $NOTIFY_SOCKET once: with none, the calls below do nothing (not even format). */
void qj_notify_init(struct qj_notify *n);
/* READY=1 with the current status. */
void qj_notify_ready(struct qj_notify *n, const struct qj_cycle *c, size_t n_holds);
/* STATUS= when it differs from the last one sent. */
void qj_notify_status(struct qj_notify *n, const struct qj_cycle *c, size_t n_holds);
/* STOPPING=1 with a status saying why. */
void qj_notify_stopping(struct qj_notify *n, const char *why);

#endif
