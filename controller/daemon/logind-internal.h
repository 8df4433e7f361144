/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the logind bridge's two halves share: logind.c follows logind on the bus (the
 * list, its signals, logind leaving and coming back), logind-holds.c turns the listed
 * inhibitors into holds (who counts, per-uid bounds, the fail-closed hold "logind").
 * Private to controller/daemon/.
 */
#ifndef QJ_LOGIND_INTERNAL_H
#define QJ_LOGIND_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "holds.h"
#include "logind.h"
#include "loop.h"
#include "policy.h"

typedef struct sd_bus sd_bus;
typedef struct sd_bus_slot sd_bus_slot;

#define QJ_LOGIND_REASON_MAX (QJ_HOLD_REASON_MAX + 1)

struct qj_lgi_inhibitor {
	char *who, *why;
	uid_t uid;
	pid_t pid;
	/*
	 * Jail membership of pid, decided while the process can be known (pidfd) and kept
	 * once it exited, as for socket clients: the inhibitor's fd may live on in a child.
	 */
	int pidfd; /* -EBADF: not opened yet */
	int app_r; /* 1 jailed, 0 not, negative errno unknown */
	bool app_known; /* app_r is an answer read while the process lived */
	bool app_final; /* the process exited: app_r no longer changes */
	char app[QJ_POLICY_NAME_MAX + 1];
	uint64_t conn; /* its hold's connection id; 0 while it is not a hold */
	char name[QJ_HOLD_NAME_MAX + 1];
	bool seen; /* in the list being read */
	bool decided; /* counts() ran for it once (it logs the first decision) */
	bool pending; /* counts, but its hold could not be taken: retried */
	int take_error;
};

struct qj_logind {
	struct qj_event_source source; /* the bus's fd */
	int fd;
	struct qj_logind_handles h;
	sd_bus *bus;
	sd_bus_slot *list_slot; /* ListInhibitors in flight */
	bool relist; /* a change came while the list was in flight */
	bool logind_present;
	char *owner; /* logind's unique name ("" unknown): the only sender of its signals */
	uint64_t n_forged; /* signals refused for their sender */
	uint64_t retry_usec, retry_at_usec; /* the retry of a failed list */
	uint64_t away_since_usec, away_until_usec; /* logind left: USEC_INFINITY when here */
	uint64_t app_gen; /* the app generation its decisions were made at */

	/* logind-holds.c */
	struct qj_lgi_inhibitor *v;
	size_t n;
	size_t n_pending;
	uint64_t next_conn;
	uint64_t pending_retry_usec, pending_at_usec;
	bool list_unknown; /* the list is not known (first list in flight, or failed) */
	char unknown_why[QJ_LOGIND_REASON_MAX];
	bool failclosed; /* the hold "logind" is taken */
	char failclosed_why[QJ_HOLD_REASON_MAX + 1];
};

/* Marks every inhibitor unseen before a list is read. */
void qj_lgi_unsee_all(struct qj_logind *b);
/* An inhibitor of the list being read: found (0) or added (1); -ENOMEM. */
int qj_lgi_see(struct qj_logind *b, const char *who, const char *why, uid_t uid, pid_t pid);
/* Drops the inhibitors the list just read no longer has. */
void qj_lgi_drop_unseen(struct qj_logind *b);
/*
 * Decides again which inhibitors count and takes or releases their holds and the
 * fail-closed hold; true when the hold count changed (the caller tells the cycle).
 */
bool qj_lgi_apply_all(struct qj_logind *b);
/* Drops every inhibitor and the fail-closed hold; returns how many holds went. */
size_t qj_lgi_drop_all(struct qj_logind *b);
/* Takes, refreshes or releases the hold "logind" as the bridge's state says. */
bool qj_lgi_update_failclosed(struct qj_logind *b);

#endif
