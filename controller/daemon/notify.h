/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The service manager's readiness protocol (sd_notify, Type=notify): READY=1 once the
 * socket listens and the jail is set up, STATUS= on every change of the cycle's state or
 * hold count, STOPPING=1 when an exit begins, WATCHDOG=1 from the loop when the unit sets
 * WatchdogSec=.  Without $NOTIFY_SOCKET each call is a no-op.
 */
#ifndef QJ_NOTIFY_H
#define QJ_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct qj_cycle;

struct qj_notify {
	bool enabled; /* $NOTIFY_SOCKET was set at start */
	uint64_t watchdog_usec; /* WatchdogSec= of the service (WATCHDOG_USEC), 0: none */
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
/*
 * How often the loop must send WATCHDOG=1: half the service's WatchdogSec=, 0 when the
 * service manager asked for none (then the loop arms no timer for it: zero wakeups idle).
 */
uint64_t qj_notify_watchdog_interval(const struct qj_notify *n);
/* WATCHDOG=1: the loop is alive (sent from the loop thread only). */
void qj_notify_watchdog(struct qj_notify *n);

#endif
