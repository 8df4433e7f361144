/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Replies to a request, for every file of the daemon that answers one (requests.c, the
 * listings, the cycle's ops, explain.c).  Private to controller/daemon/.
 */
#ifndef QJ_REPLY_H
#define QJ_REPLY_H

#include <jansson.h>

struct qj_ipc_client;

/*
 * Sends @msg (taken; NULL: out of memory, @c is disconnected) with @pass_fd (-1: none);
 * one too large gets an error reply instead.
 */
void qj_daemon_reply(struct qj_ipc_client *c, json_t *msg, int pass_fd);
void qj_daemon_reply_error(struct qj_ipc_client *c, int error, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
