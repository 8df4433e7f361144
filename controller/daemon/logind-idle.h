/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The idle-hint bridge (policy logind.idle_hint): while an active local graphical session
 * of class "user" is not idle, the hold "logind:user-active" (the session's uid and
 * leader as owner, the session and seat in its reason) keeps the system awake.  A hint
 * counts only when a process that is not jailed set it: a D-Bus monitor connection sees
 * every Session.SetIdleHint call, the caller's pid is asked of the bus driver and its jail
 * membership decided while it lives (pidfd), and a jailed or unknown caller's hint is
 * ignored.  Fails closed: while the sessions are unknown (first read, a failed read, no
 * monitor) the hold is taken; while logind is away, for at most logind.absent_max.
 * Followed on the daemon's epoll loop (sd-bus, no thread).  Private to controller/daemon/.
 */
#ifndef QJ_LOGIND_IDLE_H
#define QJ_LOGIND_IDLE_H

#include <stdbool.h>
#include <stdint.h>

struct qj_logind_handles;
struct qj_logind_idle;

/* Connects (the system bus, twice: one connection becomes the monitor); 0 or -errno. */
int qj_logind_idle_new(const struct qj_logind_handles *h, struct qj_logind_idle **ret);
/* Drops the bridge's hold (without telling the cycle) and disconnects. */
struct qj_logind_idle *qj_logind_idle_free(struct qj_logind_idle *b);
/* False once a bus connection went away (a reload starts the bridge again). */
bool qj_logind_idle_connected(const struct qj_logind_idle *b);
uint64_t qj_logind_idle_next_usec(const struct qj_logind_idle *b);
void qj_logind_idle_on_timer(struct qj_logind_idle *b, uint64_t now_usec);

#endif
