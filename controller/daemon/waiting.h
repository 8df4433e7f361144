/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Trusted work waiting on the jail, as a JSON array (waiting.c; its daemon-level calls,
 * status's cached listing and the cycle's records, are in daemon-internal.h).  Private
 * to controller/daemon/.
 */
#ifndef QJ_WAITING_H
#define QJ_WAITING_H

#include <jansson.h>
#include <sys/types.h>

struct qj_engine;

/* What waits on @e's jail (@only: that pid's, 0: all); an empty array when unknown. */
json_t *qj_waiters_json(struct qj_engine *e, pid_t only);

#endif
