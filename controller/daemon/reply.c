// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Replies to a request, for every file of the daemon that answers one (requests.c,
 * explain.c): a reply that cannot be built or sent still gets an answer.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "ipc.h"
#include "log.h"
#include "proto.h"
#include "reply.h"

void qj_daemon_reply(struct qj_ipc_client *c, json_t *msg, int pass_fd)
{
	int r;

	if (!msg) {
		log_error("Out of memory building a reply, disconnecting client %" PRIu64, c->id);
		qj_ipc_disconnect(c);
		return;
	}
	r = qj_ipc_send(c, msg, pass_fd);
	json_decref(msg);
	if (r == -EMSGSIZE || r == -ENOMEM) {
		/* Never leave a client waiting for a reply that was not sent. */
		msg = qj_reply_new_error(r, "reply too large or out of memory");
		if (msg)
			(void)qj_ipc_send(c, msg, -1);
		json_decref(msg);
	}
}

void qj_daemon_reply_error(struct qj_ipc_client *c, int error, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	qj_daemon_reply(c, qj_reply_new_error(error, "%s", msg), -1);
}
