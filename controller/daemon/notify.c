// SPDX-License-Identifier: LGPL-2.1-or-later
/* sd_notify for Type=notify (see notify.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "cycle.h"
#include "log.h"
#include "notify.h"

/*
 * "idle-wait, 0 holds; cycle 3 resumed": the state, the holds, and how the last cycle
 * ended (a suspend that returned is a resume).
 */
const char *qj_notify_format_status(const struct qj_cycle *c, size_t n_holds, char *buf,
				    size_t size)
{
	int n = snprintf(buf, size, "%s, %zu hold%s", qj_cycle_state_to_string(c->state), n_holds,
			 n_holds == 1 ? "" : "s");

	if (n >= 0 && (size_t)n < size && c->id > 0 && c->last_result != QJ_CYCLE_RESULT_NONE)
		(void)snprintf(buf + n, size - (size_t)n, "; cycle %" PRIu64 " %s", c->id,
			       c->last_result == QJ_CYCLE_RESULT_SUSPENDED ?
				       "resumed" :
				       qj_cycle_result_to_string(c->last_result));
	return buf;
}

static void send_notify(const char *text)
{
	int r = sd_notify(0, text);

	/* The service manager went away or refused: it is its own problem, not the jail's. */
	if (r < 0)
		log_warning_errno(r, "Failed to notify the service manager: %m, ignoring");
}

void qj_notify_init(struct qj_notify *n)
{
	uint64_t usec = 0;

	*n = (struct qj_notify){ .enabled = getenv("NOTIFY_SOCKET") != NULL };
	/* Also checks WATCHDOG_PID: a watchdog meant for another process is not ours. */
	if (n->enabled && sd_watchdog_enabled(0, &usec) > 0)
		n->watchdog_usec = usec;
}

uint64_t qj_notify_watchdog_interval(const struct qj_notify *n)
{
	return n->watchdog_usec / 2;
}

void qj_notify_watchdog(struct qj_notify *n)
{
	if (n->enabled && n->watchdog_usec)
		send_notify("WATCHDOG=1");
}

void qj_notify_ready(struct qj_notify *n, const struct qj_cycle *c, size_t n_holds)
{
	char msg[sizeof(n->last_status) + 32];

	if (!n->enabled)
		return;

	qj_notify_format_status(c, n_holds, n->last_status, sizeof(n->last_status));
	snprintf(msg, sizeof(msg), "READY=1\nSTATUS=%s", n->last_status);
	send_notify(msg);
}

void qj_notify_status(struct qj_notify *n, const struct qj_cycle *c, size_t n_holds)
{
	char status[sizeof(n->last_status)], msg[sizeof(status) + 8];

	if (!n->enabled)
		return;

	qj_notify_format_status(c, n_holds, status, sizeof(status));
	if (strcmp(status, n->last_status) == 0)
		return;
	strcpy(n->last_status, status);
	snprintf(msg, sizeof(msg), "STATUS=%s", status);
	send_notify(msg);
}

void qj_notify_stopping(struct qj_notify *n, const char *why)
{
	char msg[sizeof(n->last_status) + 32];

	if (!n->enabled)
		return;

	snprintf(n->last_status, sizeof(n->last_status), "%s", why);
	snprintf(msg, sizeof(msg), "STOPPING=1\nSTATUS=%s", n->last_status);
	send_notify(msg);
}
