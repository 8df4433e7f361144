/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A private system bus for the logind bridge's tests: a dbus-daemon run with Debian's
 * own system-bus policy (/usr/share/dbus-1/system.conf and system.d, only the listening
 * address and the daemon's own process settings changed), so what a local user may send
 * there is what it may send on a Debian system; and python3-dbusmock's logind template
 * (extended by logind-template.py) as logind on it.  qosjaild reaches it through
 * DBUS_SYSTEM_BUS_ADDRESS, set by logind_bus_up().
 */
#ifndef QJ_LOGIND_BUS_H
#define QJ_LOGIND_BUS_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

struct harness;

/* The bus's address (unix:path=...). */
#define LOGIND_BUS_ADDRESS_MAX 400
extern char logind_bus_address[LOGIND_BUS_ADDRESS_MAX];

/* cmocka group setup and teardown: the bus and the logind mock, once for all cases. */
int logind_bus_up(void **state);
int logind_bus_down(void **state);

/* Stops the logind mock (it leaves the bus), and starts it again. */
void logind_mock_stop(void);
int logind_mock_start(void);
bool logind_on_bus(void);

/* Runs @argv with stdout and stderr to /dev/null; its exit status, or -1. */
int logind_run(const char *const *argv);
/* Starts @argv as @uid (all ids, no groups), stdout to /dev/null; its pid. */
pid_t logind_spawn(const char *const *argv, uid_t uid);
/* SIGTERMs and reaps *@pid, then sets it to -1. */
void logind_stop(pid_t *pid);

/* ListInhibitors of the mock fails with D-Bus error @name ('' lifts it). */
int logind_mock_set_list_error(const char *name);
/* systemd-inhibit holding a sleep inhibitor in @mode as @uid until it is stopped. */
pid_t logind_inhibit(const char *who, const char *why, const char *mode, uid_t uid);

/* The live hold named @name in the status (borrowed from @st), or NULL. */
json_t *logind_find_hold(json_t *st, const char *name);
/*
 * Waits until the hold @name is there (@present) or gone; checks its owner when @pid > 0.
 * False (and the daemon's log printed) when it did not happen within 20 s.
 */
bool logind_wait_hold(struct harness *h, const char *name, bool present, pid_t pid, uid_t uid);
/* The daemon's state (copied into @buf). */
const char *logind_status_state(struct harness *h, char *buf, size_t size);

/* The unique bus name of the connection of process @pid ("" when none), as anyone can learn. */
int logind_unique_name_of(pid_t pid, char *buf, size_t size);

#endif
