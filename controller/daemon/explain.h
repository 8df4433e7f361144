/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The explain request (qosjailctl explain): why a process is or is not jailed, and what
 * the next quiesce would do to it.  Access is checked before anything is read for the
 * caller; a cmdline is read off the loop thread while the client waits (paused).
 * Private to controller/daemon/.
 */
#ifndef QJ_EXPLAIN_H
#define QJ_EXPLAIN_H

#include <sys/types.h>

struct qj_engine;
struct qj_explain_pending;
struct qj_ipc_client;
struct qj_policy;

/* What explain reads, handed by the daemon, and the requests waiting for a cmdline. */
struct qj_explainer {
	struct qj_engine *engine; /* NULL: the daemon runs without its engine */
	struct qj_policy *const *policy; /* the running one (a reload swaps it) */
	struct qj_explain_pending *pending;
};

void qj_explainer_request(struct qj_explainer *x, struct qj_ipc_client *c, pid_t pid);
/* @c is going: its explain waiting for a read is dropped. */
void qj_explainer_forget(struct qj_explainer *x, struct qj_ipc_client *c);

#endif
