// SPDX-License-Identifier: LGPL-2.1-or-later
/* Who sets a session's idle hint (see logind-idle-monitor.h). */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/pidfd.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "engine.h"
#include "holds.h"
#include "log.h"
#include "logind-idle-monitor.h"
#include "logind.h"
#include "loop.h"
#include "proc.h"
#include "util.h"

#define LOGIND_NAME "org.freedesktop.login1"
#define LOGIND_SESSION "org.freedesktop.login1.Session"
#define DRIVER_NAME "org.freedesktop.DBus"

struct qj_idle_call {
	struct qj_idle_monitor *m;
	sd_bus_slot *slot;
	char *sender, *path;
	int value;
};

/* Logs the 1st, 2nd, 4th, 8th... time only: a flood costs log lines logarithmically. */
static bool log_this(uint64_t *n)
{
	(*n)++;
	return (*n & (*n - 1)) == 0;
}

static void call_free(struct qj_idle_call *c)
{
	struct qj_idle_monitor *m = c->m;

	for (size_t k = 0; k < QJ_IDLE_CALLS_MAX; k++)
		if (m->calls[k] == c)
			m->calls[k] = NULL;
	sd_bus_slot_unref(c->slot);
	free(c->sender);
	free(c->path);
	free(c);
}

/*
 * Jail membership of @pid, fail-closed as a socket client's: 0 not jailed, 1 jailed (with
 * *ret_app), negative errno unknown.  The pidfd is opened before the read and checked
 * alive after it, so the pid named the caller's process throughout.
 */
static int caller_app(const struct qj_logind_handles *h, pid_t pid, const char **ret_app)
{
	int fd = pid > 0 ? pidfd_open(pid, 0) : -1, r;

	*ret_app = "";
	if (fd < 0)
		return pid > 0 ? -errno : -ESRCH;
	/* As qj_daemon_pid_app(), not called: this file imports nothing of daemon.c. */
	if (h->engine)
		r = qj_engine_app_of_pid(h->engine, pid, ret_app);
	else
		r = h->membership ? h->membership(0, pid, ret_app) : 0;
	if (qj_pidfd_exited(fd))
		r = -ESRCH;
	close(fd);
	return r;
}

static int on_creds(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error)
{
	struct qj_idle_call *c = userdata;
	struct qj_idle_monitor *m = c->m;
	const char *key, *app = "";
	uint32_t uid = UINT32_MAX, pid = 0;
	int r = 0;

	c->slot = sd_bus_slot_unref(c->slot);
	if (!sd_bus_message_is_method_error(msg, NULL)) {
		r = sd_bus_message_enter_container(msg, 'a', "{sv}");
		while (r >= 0 && (r = sd_bus_message_enter_container(msg, 'e', "sv")) > 0) {
			r = sd_bus_message_read(msg, "s", &key);
			if (r >= 0 && strcmp(key, "UnixUserID") == 0)
				r = sd_bus_message_read(msg, "v", "u", &uid);
			else if (r >= 0 && strcmp(key, "ProcessID") == 0)
				r = sd_bus_message_read(msg, "v", "u", &pid);
			else if (r >= 0)
				r = sd_bus_message_skip(msg, "v");
			if (r >= 0)
				r = sd_bus_message_exit_container(msg);
		}
	}
	if (uid == UINT32_MAX || pid == 0 || r < 0) {
		if (log_this(&m->n_ignored))
			log_notice(
				"logind idle hint: ignoring SetIdleHint(%s) by %s: the caller is "
				"gone or unknown (%" PRIu64 " ignored so far)",
				c->value ? "true" : "false", c->sender, m->n_ignored);
		call_free(c);
		return 0;
	}
	r = caller_app(m->h, (pid_t)pid, &app);
	if (r != 0) {
		if (log_this(&m->n_ignored))
			log_notice(
				"logind idle hint: ignoring SetIdleHint(%s) by pid %u uid %u: %s%s "
				"(%" PRIu64 " ignored so far)",
				c->value ? "true" : "false", pid, uid,
				r > 0 ? "jailed in app " : "cannot tell whether it is jailed",
				r > 0 ? app : "", m->n_ignored);
		call_free(c);
		return 0;
	}
	log_debug("logind idle hint: SetIdleHint(%s) on %s by pid %u uid %u",
		  c->value ? "true" : "false", c->path, pid, uid);
	m->on_hint(m, (uid_t)uid, c->path, c->value);
	call_free(c);
	return 0;
}

/*
 * Every message is consumed (1): a monitor may not send, and sd-bus would answer a method
 * call nobody handled (the bus daemon then closes the monitor).
 */
static int on_monitored(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error)
{
	struct qj_idle_monitor *m = userdata;
	const char *dest = sd_bus_message_get_destination(msg), *sender, *owner;
	struct qj_idle_call *c;
	size_t k;
	int v;

	if (!sd_bus_message_is_method_call(msg, LOGIND_SESSION, "SetIdleHint"))
		return 1;
	sender = sd_bus_message_get_sender(msg);
	owner = *m->logind_owner;
	if (!dest || !sender ||
	    (strcmp(dest, LOGIND_NAME) != 0 && (!owner || strcmp(dest, owner) != 0)))
		return 1; /* not to logind: it changes nothing there */
	if (sd_bus_message_read(msg, "b", &v) < 0)
		return 1;
	for (k = 0; k < QJ_IDLE_CALLS_MAX && m->calls[k]; k++)
		;
	if (k == QJ_IDLE_CALLS_MAX) {
		/* A flood: the call is not attributed, so its hint does not count. */
		if (log_this(&m->n_dropped))
			log_notice("logind idle hint: %d SetIdleHint calls being identified, "
				   "ignoring one by %s (%" PRIu64 " so far)",
				   QJ_IDLE_CALLS_MAX, sender, m->n_dropped);
		return 1;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return 1;
	*c = (struct qj_idle_call){ .m = m,
				    .value = v,
				    .sender = strdup(sender),
				    .path = strdup(sd_bus_message_get_path(msg) ?: "") };
	m->calls[k] = c;
	if (!c->sender || !c->path ||
	    sd_bus_call_method_async(m->bus, &c->slot, DRIVER_NAME, "/org/freedesktop/DBus",
				     DRIVER_NAME, "GetConnectionCredentials", on_creds, c, "s",
				     sender) < 0)
		call_free(c);
	return 1;
}

static int on_become_monitor(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error)
{
	struct qj_idle_monitor *m = userdata;
	const sd_bus_error *e = sd_bus_message_get_error(msg);
	char why[QJ_HOLD_REASON_MAX + 1];

	if (e) {
		snprintf(why, sizeof(why), "cannot monitor SetIdleHint calls (BecomeMonitor: %s)",
			 e->name);
		qj_idle_monitor_close(m);
		m->on_state(m, why);
		return 1;
	}
	m->up = true;
	log_info("logind idle hint: monitoring Session.SetIdleHint calls on the system bus");
	m->on_state(m, NULL);
	return 1;
}

static void update_events(struct qj_idle_monitor *m)
{
	int e;

	if (!m->mon || m->fd < 0 || (e = sd_bus_get_events(m->mon)) < 0)
		return;
	(void)qj_loop_mod(m->h->loop, &m->source, m->fd, e & POLLOUT ? EPOLLOUT : 0);
}

void qj_idle_monitor_close(struct qj_idle_monitor *m)
{
	for (size_t k = 0; k < QJ_IDLE_CALLS_MAX; k++)
		if (m->calls[k])
			call_free(m->calls[k]);
	qj_loop_del(m->h->loop, m->fd);
	m->fd = -EBADF;
	m->mon = sd_bus_flush_close_unref(m->mon);
	m->up = false;
}

int qj_idle_monitor_start(struct qj_idle_monitor *m)
{
	const char *addr = getenv("DBUS_SYSTEM_BUS_ADDRESS");
	int r;

	qj_idle_monitor_close(m);
	r = sd_bus_new(&m->mon);
	if (r >= 0)
		r = sd_bus_set_address(m->mon, addr ?: "unix:path=/run/dbus/system_bus_socket");
	if (r >= 0)
		r = sd_bus_set_bus_client(m->mon, 1);
	if (r >= 0)
		r = sd_bus_set_monitor(m->mon, 1);
	if (r >= 0)
		r = sd_bus_add_filter(m->mon, NULL, on_monitored, m);
	if (r >= 0)
		r = sd_bus_start(m->mon);
	if (r >= 0)
		r = sd_bus_call_method_async(m->mon, NULL, DRIVER_NAME, "/org/freedesktop/DBus",
					     "org.freedesktop.DBus.Monitoring", "BecomeMonitor",
					     on_become_monitor, m, "asu", 1,
					     "type='method_call',interface='" LOGIND_SESSION
					     "',member='SetIdleHint'",
					     0);
	if (r >= 0) {
		m->fd = sd_bus_get_fd(m->mon);
		r = m->fd < 0 ? m->fd : qj_loop_add(m->h->loop, &m->source, m->fd, 0);
		if (r < 0)
			m->fd = -EBADF;
	}
	if (r < 0) {
		qj_idle_monitor_close(m);
		return r;
	}
	update_events(m);
	return 0;
}

int qj_idle_monitor_process(struct qj_idle_monitor *m)
{
	int r;

	while (m->mon && (r = sd_bus_process(m->mon, NULL)) != 0)
		if (r < 0) {
			qj_idle_monitor_close(m);
			return r;
		}
	update_events(m);
	return 0;
}

uint64_t qj_idle_monitor_timeout(const struct qj_idle_monitor *m)
{
	uint64_t t = USEC_INFINITY;

	if (!m->mon || sd_bus_get_timeout(m->mon, &t) < 0)
		return USEC_INFINITY;
	return t;
}
