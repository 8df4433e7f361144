/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The logind bridge: every active `sleep` inhibitor in `block` mode that systemd-logind
 * lists becomes a hold in the daemon's table (name "logind:WHO", reason WHY, the
 * inhibitor's uid and pid as owner), when the policy's logind.inhibitors lists its uid
 * and its pid is not in the jail.  Followed live on the daemon's own epoll loop (sd-bus,
 * no thread, no polling): logind's PropertiesChanged (BlockInhibited) and NameOwnerChanged
 * make it re-list with ListInhibitors.  Fail closed: while the list is unknown (the first
 * ListInhibitors in flight, or one that failed) a hold named "logind" keeps the system
 * awake.  Private to controller/daemon/.
 */
#ifndef QJ_LOGIND_H
#define QJ_LOGIND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct qj_engine;
struct qj_holds;
struct qj_logind;
struct qj_loop;
struct qj_loop_work;
struct qj_policy;

/*
 * What the bridge is handed instead of the daemon: the loop it registers its bus on, the
 * hold table its inhibitors go into, the work it posts when the hold count changed, and
 * where it reads the running policy (a reload swaps it) and the app generation (bumped
 * whenever jail membership may have changed).  Jail membership of a pid is the engine's,
 * else @membership's (a daemon without its engine), else "not jailed".
 */
struct qj_logind_handles {
	struct qj_loop *loop;
	struct qj_holds *holds;
	struct qj_loop_work *holds_changed;
	struct qj_policy *const *policy;
	const uint64_t *app_gen;
	struct qj_engine *engine;
	int (*membership)(uint64_t client_id, pid_t pid, const char **ret_app);
};

/*
 * Connects to the system bus (DBUS_SYSTEM_BUS_ADDRESS, else the default socket) and
 * registers with the loop.  Returns 0, or a negative errno when there is no bus (the
 * caller logs one line and runs without a bridge).
 */
int qj_logind_new(const struct qj_logind_handles *h, struct qj_logind **ret);
/* Drops the bridge's holds (without telling the cycle) and disconnects. */
struct qj_logind *qj_logind_free(struct qj_logind *b);

/* When the bridge's timer is due (sd-bus call timeouts, the retry after a failed list). */
uint64_t qj_logind_next_usec(const struct qj_logind *b);
void qj_logind_on_timer(struct qj_logind *b, uint64_t now_usec);
/*
 * Jail membership or the policy changed: decides again which inhibitors count.  Cheap
 * when nothing changed since the last call (compares the daemon's app generation).
 */
void qj_logind_recheck(struct qj_logind *b, bool force);
/* False once the bus went away (the daemon then frees the bridge). */
bool qj_logind_connected(const struct qj_logind *b);

#endif
