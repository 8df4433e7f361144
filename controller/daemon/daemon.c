// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * qosjaild's manager: the epoll loop and its sources, the suspend cycle's effects, policy
 * reload and the daemon's lifetime (see daemon.h).  The request handlers are in requests.c.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/pidfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "backend.h"
#include "cycle.h"
#include "daemon-internal.h"
#include "daemon.h"
#include "delegate.h"
#include "engine.h"
#include "events.h"
#include "holds.h"
#include "ipc.h"
#include "killlog.h"
#include "log.h"
#include "logind-idle.h"
#include "logind.h"
#include "loop.h"
#include "policy.h"
#include "proto.h"
#include "sampler.h"
#include "util.h"

/* How often an interrupt is re-sent while the worker has not returned (closes the race
 * between its cancel check and entering the blocking syscall). */
#define INTERRUPT_RESEND_USEC (20 * USEC_PER_MSEC)

/* ---- timer ---- */

static void rearm_timer(struct qj_daemon *d)
{
	uint64_t t = d->cycle.deadline_usec;
	int r;

	if (qj_holds_next_deadline(d->holds) < t)
		t = qj_holds_next_deadline(d->holds);
	if (d->interrupt_resend_usec < t)
		t = d->interrupt_resend_usec;
	if (d->ipc && qj_ipc_resume_usec(d->ipc) < t)
		t = qj_ipc_resume_usec(d->ipc);
	if (qj_logind_next_usec(d->logind) < t)
		t = qj_logind_next_usec(d->logind);
	if (qj_logind_idle_next_usec(d->logind_idle) < t)
		t = qj_logind_idle_next_usec(d->logind_idle);
	/*
	 * Lazy: a timer already armed at or before @t stays as it is.  The idle
	 * deadline moves later on every release, and re-arming each time cost a
	 * syscall per request; an early expiry only re-runs on_timer(), which finds
	 * nothing due and arms the real deadline.
	 */
	if (t >= qj_loop_timer_armed(&d->timer))
		return;
	r = qj_loop_timer_arm(&d->timer, t);
	if (r < 0)
		log_error_errno(r, "Failed to arm the timer: %m");
}

/* ---- the cycle's effects ---- */

int qj_daemon_pid_app(struct qj_daemon *d, pid_t pid, const char **ret_app)
{
	*ret_app = "";
	if (d->engine)
		return qj_engine_app_of_pid(d->engine, pid, ret_app);
	if (d->membership)
		return d->membership(0, pid, ret_app);
	return 0;
}

#define DAEMON_OF(w, member) ((struct qj_daemon *)((char *)(w)-offsetof(struct qj_daemon, member)))

static void on_holds_work(struct qj_loop_work *w)
{
	struct qj_daemon *d = DAEMON_OF(w, holds_work);

	qj_daemon_apply(d, qj_cycle_on_holds(&d->cycle, qj_holds_count(d->holds), qj_daemon_now()));
}

/* events.c: the delay holds changed; a PREPARING cycle with none left waiting goes on. */
static void on_delays_work(struct qj_loop_work *w)
{
	struct qj_daemon *d = DAEMON_OF(w, delays_work);

	if (d->exiting || d->cycle.state != QJ_CYCLE_PREPARING ||
	    qj_events_n_pending(d->events) > 0)
		return;
	qj_daemon_apply(d, qj_cycle_on_ready(&d->cycle, 0, qj_daemon_now()));
}

/* Carries out one quiesce step; returns what the cycle says to do next. */
static unsigned quiesce_step(struct qj_daemon *d)
{
	uint64_t next = USEC_INFINITY;
	int r = 1;

	if (d->engine)
		r = qj_engine_quiesce_step(d->engine, qj_daemon_now(), &next);
	if (r == 1 && d->cycle.state == QJ_CYCLE_QUIESCING) {
		struct qj_engine_counts c = {};

		/* The engine's own measure when there is one: the kill log summary's. */
		if (d->engine && qj_engine_counts(d->engine, &c) == 0 && c.quiesce_usec)
			qj_metrics_quiesced(&d->metrics, c.quiesce_usec);
		else
			qj_metrics_quiesced(&d->metrics, qj_daemon_now() - d->quiesce_begin_usec);
	}
	if (r < 0)
		log_error_errno(r, "Quiesce step of cycle %" PRIu64 " failed: %m", d->cycle.id);
	return qj_cycle_on_quiesce(&d->cycle, r, next, qj_daemon_now());
}

/* Carries out @actions once; returns the actions they lead to (a step's, a failure's). */
static unsigned apply_once(struct qj_daemon *d, unsigned actions)
{
	unsigned next = 0;
	int r;

	if (actions & QJ_CYCLE_DO_QUIESCE_BEGIN) {
		d->app_gen++;
		d->quiesce_begin_usec = qj_daemon_now();
		if (d->killlog) /* its summary says when it began (the sleep is not in window_ms) */
			(void)qj_killlog_cycle_begin(d->killlog, d->cycle.id,
						     now_usec(CLOCK_REALTIME));
		log_info("Cycle %" PRIu64 ": no holds, quiescing the jail", d->cycle.id);
		r = qj_power_prepare(d->power);
		if (r < 0) {
			log_warning_errno(r, "Failed to read the wakeup count: %m");
			qj_metrics_backend_error(&d->metrics, r);
			return qj_cycle_on_quiesce(&d->cycle, r, 0, qj_daemon_now());
		}
		if (d->engine) {
			r = qj_engine_quiesce_begin(d->engine, d->cycle.id, qj_daemon_now());
			if (r < 0) {
				log_error_errno(r, "Failed to quiesce the jail: %m");
				return qj_cycle_on_quiesce(&d->cycle, r, 0, qj_daemon_now());
			}
		}
	}
	if (actions & QJ_CYCLE_DO_QUIESCE_KEPT)
		next |= qj_daemon_dark_quiesce(d);
	if (actions & QJ_CYCLE_DO_QUIESCE_STEP)
		next |= quiesce_step(d);
	if (actions & QJ_CYCLE_DO_BACKEND_START) {
		log_info("Cycle %" PRIu64 ": jail quiesced, suspending (%s)", d->cycle.id,
			 qj_backend_to_string(qj_power_kind(d->power)));
		/* What trusted work now waits out the suspend on the stopped jail (finding 6). */
		qj_daemon_log_waiters(d);
		r = qj_power_start(d->power);
		if (r < 0) {
			qj_metrics_backend_error(&d->metrics, r);
			next |= qj_cycle_on_backend(&d->cycle, r, qj_daemon_now());
		}
	}
	if (actions & QJ_CYCLE_DO_BACKEND_INTERRUPT) {
		log_info("Cycle %" PRIu64 ": hold taken, interrupting the suspend write",
			 d->cycle.id);
		qj_power_interrupt(d->power);
		d->interrupt_resend_usec = qj_daemon_now() + INTERRUPT_RESEND_USEC;
	}
	if ((actions & QJ_CYCLE_DO_RESTORE) && d->cycle.restoring_kept) {
		qj_daemon_dark_restore(d);
		qj_daemon_write_metrics(d);
	} else if (actions & QJ_CYCLE_DO_RESTORE) {
		const char *why = qj_cycle_result_to_string(d->cycle.last_result);

		if (d->engine) {
			r = qj_engine_restore(d->engine, why);
			if (r < 0)
				log_error_errno(r, "Failed to restore the jail: %m");
		}
		log_info("Cycle %" PRIu64 " ended: %s", d->cycle.id, why);
		qj_metrics_cycle_ended(&d->metrics, d->cycle.last_result);
		qj_daemon_write_metrics(d);
	}
	if (actions & QJ_CYCLE_DO_KEEP) {
		next |= qj_daemon_dark_keep(d);
		qj_daemon_write_metrics(d);
	}
	if (actions & QJ_CYCLE_DO_RESUME_WAITERS)
		qj_daemon_process_deferred(d);
	qj_events_sync(d->events, true); /* "resumed" after the restore */
	return next;
}

/*
 * Posted work: a plain loop over the actions the cycle returns, each state a failure or a
 * step passes through in turn.  Nothing here calls back into itself: what the modules it
 * drives want (a hold released by a dropped subscriber, deferred requests answered) is
 * posted and runs after it.
 */
static void on_apply_work(struct qj_loop_work *w)
{
	struct qj_daemon *d = DAEMON_OF(w, apply_work);

	do {
		unsigned actions = d->actions;

		d->actions = 0;
		/* Every change of the cycle's state or hold count: STATUS= follows, no polling. */
		if (d->started)
			qj_notify_status(&d->notify, &d->cycle, qj_holds_count(d->holds));
		/* "quiescing" and "suspending" go out before the jail or the backend act. */
		qj_events_sync(d->events, false);
		d->actions |= apply_once(d, actions);
	} while (d->actions);
	rearm_timer(d);
}

static void reload_on_sighup(struct qj_daemon *d);

static void on_backend_done(struct qj_daemon *d, int result)
{
	d->interrupt_resend_usec = USEC_INFINITY;
	qj_power_log_result(d->cycle.id, result);
	/* A write a hold interrupted is no backend error; one that failed on its own is. */
	if (result < 0 && d->cycle.state == QJ_CYCLE_SUSPENDING && !d->cycle.interrupting &&
	    !(result == -EINTR && d->cycle.n_holds > 0))
		qj_metrics_backend_error(&d->metrics, result);
	qj_daemon_apply(d, qj_cycle_on_backend(&d->cycle, result, qj_daemon_now()));
	if (d->reload_pending)
		reload_on_sighup(d); /* waits again if another write started */
}

/*
 * The metrics file's directory, walked safely and then held (metrics.h): the daemon
 * writes as root where a user may own the directory.  Tried at start and before each
 * write until it succeeds.
 */
static int open_metrics_dir(struct qj_daemon *d)
{
	int r;

	if (d->metrics_dfd >= 0)
		return 0;
	r = qj_metrics_open_dir(d->metrics_path, &d->metrics_dfd, &d->metrics_base);
	if (r == -EPERM || r == -ELOOP)
		log_warning("Refusing to write the metrics file %s: a directory on its path %s; "
			    "it is written once every directory above its own is root's",
			    d->metrics_path,
			    r == -ELOOP ? "is a symlink" :
					  "belongs to, or is writable by, a user other than root");
	else if (r < 0)
		log_warning_errno(r, "Cannot open the directory of the metrics file %s: %m",
				  d->metrics_path);
	return r;
}

void qj_daemon_write_metrics(struct qj_daemon *d)
{
	struct qj_metrics_view view = qj_daemon_metrics_view(d);
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r;

	if (!d->metrics_path || open_metrics_dir(d) < 0)
		return;
	r = qj_metrics_text(&view, QJ_METRICS_MAX_TEXT, &text, &len);
	if (r >= 0)
		r = qj_metrics_write_at(d->metrics_dfd, d->metrics_base, text, len);
	if (r == -ELOOP)
		log_warning("Refusing to write the metrics file %s: it is a symlink",
			    d->metrics_path);
	else if (r < 0)
		log_warning_errno(r, "Failed to write the metrics file %s, ignoring: %m",
				  d->metrics_path);
}

/* ---- fd sources ---- */

/*
 * SIGHUP: reload the policy file.  While the backend write runs the policy cannot be
 * swapped (the worker reads it); the reload then waits until the write returns
 * (issue 11 finding 10: it used to be refused and lost).  Several SIGHUPs meanwhile
 * make one reload, of the file as it is then.
 */
static void reload_on_sighup(struct qj_daemon *d)
{
	struct qj_diags diags = {};
	int r;

	if (!d->policy_path) {
		log_notice("SIGHUP: running on built-in defaults, nothing to reload");
		return;
	}
	if (qj_power_running(d->power)) {
		if (!d->reload_pending)
			log_info("SIGHUP during the suspend write: reloading when it returns");
		d->reload_pending = true;
		return;
	}
	d->reload_pending = false;
	r = qj_daemon_reload(d, d->policy_path, &diags);
	if (r < 0) {
		log_warning_errno(r, "SIGHUP: reload of %s failed, keeping the running policy: %m",
				  d->policy_path);
		qj_diags_print(&diags, stderr);
	} else {
		log_info("SIGHUP: reloaded %s", d->policy_path);
	}
	qj_diags_done(&diags);
}

static void on_signal(struct qj_event_source *s, uint32_t events)
{
	struct qj_daemon *d = ((struct fd_source *)s)->d;
	struct signalfd_siginfo si;

	while (read(d->signal_src.fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			reload_on_sighup(d);
			continue;
		}
		log_info("Received %s, restoring the jail and exiting",
			 sigabbrev_np((int)si.ssi_signo));
		if (!d->exiting)
			qj_notify_stopping(&d->notify, "restoring the jail and exiting");
		d->exiting = true;
	}
}

static void on_timer(struct qj_loop_timer *timer)
{
	struct qj_daemon *d = DAEMON_OF(timer, timer);
	uint64_t t = qj_daemon_now();
	size_t n;

	n = qj_holds_expire(d->holds, t);
	if (n > 0) {
		log_debug("%zu hold(s) expired", n);
		qj_daemon_holds_changed(d);
	}
	if (d->interrupt_resend_usec <= t) {
		if (qj_power_running(d->power)) {
			qj_power_interrupt(d->power);
			d->interrupt_resend_usec = t + INTERRUPT_RESEND_USEC;
		} else {
			d->interrupt_resend_usec = USEC_INFINITY;
		}
	}
	qj_ipc_on_timer(d->ipc, t);
	qj_logind_on_timer(d->logind, t);
	qj_logind_idle_on_timer(d->logind_idle, t);
	qj_daemon_apply(d, qj_cycle_on_timer(&d->cycle, t));
}

static void on_notify(struct qj_event_source *s, uint32_t events)
{
	struct qj_daemon *d = ((struct fd_source *)s)->d;
	int result;

	if (qj_power_collect(d->power, &result) > 0)
		on_backend_done(d, result);
}

static void on_procmon(struct qj_event_source *s, uint32_t events)
{
	struct qj_daemon *d = ((struct fd_source *)s)->d;
	int r = qj_engine_on_procmon(d->engine);

	d->app_gen++; /* exec matching may have jailed a peer */
	if (r < 0)
		log_warning_errno(r, "Process events: %m, ignoring");
}

static int add_source(struct qj_daemon *d, struct fd_source *src, int fd,
		      void (*dispatch)(struct qj_event_source *, uint32_t));

/*
 * WatchdogSec=: the loop proves it runs.  A loop stuck in a call (the stall of issue 25
 * finding 1) stops pinging, systemd kills and restarts the daemon, and the start undoes
 * whatever the jail was left in.
 */
static void on_watchdog(struct qj_event_source *s, uint32_t events)
{
	struct qj_daemon *d = ((struct fd_source *)s)->d;
	uint64_t v;

	(void)!read(d->watchdog_src.fd, &v, sizeof(v));
	qj_notify_watchdog(&d->notify);
}

/* A periodic timer only when the service manager asked for a watchdog. */
static int watchdog_start(struct qj_daemon *d)
{
	uint64_t every = qj_notify_watchdog_interval(&d->notify);
	struct itimerspec its = {};
	int r;

	if (every == 0)
		return 0;
	r = add_source(d, &d->watchdog_src,
		       timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC), on_watchdog);
	if (r < 0)
		return r;
	its.it_value.tv_sec = its.it_interval.tv_sec = (time_t)(every / USEC_PER_SEC);
	its.it_value.tv_nsec = its.it_interval.tv_nsec = (long)(every % USEC_PER_SEC) * 1000;
	if (timerfd_settime(d->watchdog_src.fd, 0, &its, NULL) < 0)
		return -errno;
	log_info("Watchdog: WATCHDOG=1 every %" PRIu64 " ms", (uint64_t)(every / USEC_PER_MSEC));
	return 0;
}

/* Answers of cmdline reads: exec matching may have jailed a peer, an explain gets its reply. */
static void on_procread(struct qj_event_source *s, uint32_t events)
{
	struct qj_daemon *d = ((struct fd_source *)s)->d;
	int r = qj_engine_on_procread(d->engine);

	if (r > 0)
		d->app_gen++;
	if (r < 0)
		log_warning_errno(r, "Process reads: %m, ignoring");
}

static int add_source(struct qj_daemon *d, struct fd_source *src, int fd,
		      void (*dispatch)(struct qj_event_source *, uint32_t))
{
	src->source.dispatch = dispatch;
	src->d = d;
	src->fd = fd;
	return qj_loop_add(d->loop, &src->source, fd, 0);
}

/* ---- lifetime ---- */

static int make_parent_dir(const char *path)
{
	_cleanup_free_ char *dir = strdup(path);
	char *slash;

	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* The loop and its sources: signals, the cycle's timer, the backend's answers, the watchdog. */
static int setup_loop(struct qj_daemon *d)
{
	sigset_t ss;
	int r;

	/* Signals: the loop reads them from a signalfd; SIGUSR1 is only for the worker. */
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigaddset(&ss, SIGHUP);
	sigaddset(&ss, SIGUSR1);
	if (sigprocmask(SIG_BLOCK, &ss, NULL) < 0)
		return -errno;
	(void)signal(SIGPIPE, SIG_IGN);
	sigdelset(&ss, SIGUSR1);

	r = qj_loop_new(&d->loop);
	if (r < 0) {
		log_error_errno(r, "epoll_create1 failed: %m");
		return r;
	}
	r = add_source(d, &d->signal_src, signalfd(-1, &ss, SFD_NONBLOCK | SFD_CLOEXEC), on_signal);
	if (r >= 0)
		r = qj_loop_timer_add(d->loop, &d->timer, on_timer);
	if (r >= 0)
		r = add_source(d, &d->notify_src, eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC),
			       on_notify);
	if (r >= 0)
		r = watchdog_start(d);
	if (r < 0)
		log_error_errno(r, "Failed to set up the event loop: %m");
	return r;
}

/* The jail engine and its sources on the loop: process events, the cmdline reader's answers. */
static int setup_engine(struct qj_daemon *d)
{
	int r;

	/* Without it every task would look gone or idle: a spinning jail passed as quiet. */
	r = qj_sample_check("/proc/self");
	if (r < 0)
		return log_error_errno(r, "Busy detection needs /proc/PID/schedstat with run times "
					  "(kernel option CONFIG_SCHED_INFO, selected by "
					  "CONFIG_SCHEDSTATS): refusing to start: %m");
	/* Under systemd with Delegate=yes: into our own leaf before the jail is made. */
	r = qj_delegate_enter();
	if (r < 0)
		return r;
	r = qj_engine_new(d->policy, d->killlog, d->state_dir, &d->engine);
	if (r < 0)
		return log_error_errno(r, "Failed to set up the jail %s: %m",
				       d->policy->cgroup_path);
	if (qj_engine_procmon_fd(d->engine) >= 0) {
		r = add_source(d, &d->procmon_src, qj_engine_procmon_fd(d->engine), on_procmon);
		if (r < 0)
			return r;
	}
	return add_source(d, &d->procread_src, qj_engine_procread_fd(d->engine), on_procread);
}

int qj_daemon_new(const struct qj_daemon_config *cfg, struct qj_daemon **ret)
{
	struct qj_diags diags = {};
	struct qj_daemon *d;
	int r;

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->signal_src.fd = d->notify_src.fd = -EBADF;
	d->metrics_dfd = -EBADF;
	d->procmon_src.fd = d->procread_src.fd = d->watchdog_src.fd = -EBADF;
	d->interrupt_resend_usec = USEC_INFINITY;
	d->apply_work.run = on_apply_work;
	d->holds_work.run = on_holds_work;
	d->delays_work.run = on_delays_work;
	qj_notify_init(&d->notify);

	r = qj_daemon_load_policy(cfg->policy_path, &diags, &d->policy);
	if (r < 0) {
		qj_diags_print(&diags, stderr);
		qj_diags_done(&diags);
		log_error_errno(r, "Failed to load policy %s: %m", cfg->policy_path);
		goto fail;
	}
	qj_diags_done(&diags);
	d->policy_path = cfg->policy_path ? strdup(cfg->policy_path) : NULL;
	d->state_dir = strdup(cfg->state_dir);
	d->metrics_path = cfg->metrics_path ? strdup(cfg->metrics_path) : NULL;
	if ((cfg->policy_path && !d->policy_path) || !d->state_dir ||
	    (cfg->metrics_path && !d->metrics_path)) {
		r = -ENOMEM;
		goto fail;
	}
	if (d->metrics_path)
		(void)open_metrics_dir(d); /* held from start: later swaps cannot redirect it */

	r = setup_loop(d);
	if (r < 0)
		goto fail;

	r = qj_holds_new(&d->holds);
	if (r >= 0)
		r = qj_events_new(&d->cycle, d->loop, &d->delays_work, &d->events);
	if (r < 0)
		goto fail;
	qj_events_set_max_delay(d->events, d->policy->max_delay_usec);
	r = qj_power_new(d->policy, d->notify_src.fd, &d->power);
	if (r < 0) {
		log_error_errno(r, "Failed to set up the %s backend: %m",
				qj_backend_to_string(d->policy->backend));
		goto fail;
	}
	log_info("Power backend: %s (%s)", qj_backend_to_string(qj_power_kind(d->power)),
		 qj_power_kind(d->power) == QJ_BACKEND_DRY_RUN ? "no kernel write" :
								 qj_power_path(d->power));

	r = qj_killlog_open(d->policy->log_path, d->policy->log_max_bytes, d->policy->log_keep,
			    &d->killlog);
	if (r < 0) {
		log_error_errno(
			r,
			r == -EPERM ? "Refusing the kill log %s: its directory (and every one "
				      "above it) must be owned by root and not writable by "
				      "group or others, and the log a regular file: %m" :
			r == -ELOOP ? "Refusing the kill log %s: a symlink on its path: %m" :
				      "Failed to open the kill log %s: %m",
			d->policy->log_path);
		goto fail;
	}
	d->membership = cfg->membership;
	if (!cfg->no_engine) {
		r = setup_engine(d);
		if (r < 0)
			goto fail;
	}

	d->explainer = (struct qj_explainer){ .engine = d->engine, .policy = &d->policy };
	r = make_parent_dir(cfg->socket_path);
	if (r >= 0)
		r = qj_ipc_new(qj_loop_fd(d->loop), cfg->socket_path, &qj_daemon_ipc_ops, d,
			       &d->ipc);
	if (r < 0) {
		log_error_errno(r, "Failed to listen on %s: %m", cfg->socket_path);
		goto fail;
	}
	qj_ipc_set_limits(d->ipc, d->policy->max_clients, d->policy->max_clients_per_uid);

	qj_cycle_init(&d->cycle, d->policy->idle_delay_usec, d->policy->retry_initial_usec,
		      d->policy->retry_max_usec, qj_daemon_now());
	qj_cycle_set_delays(&d->cycle, 0, d->policy->max_delay_usec);
	qj_cycle_set_keep_quiesced(&d->cycle, d->policy->dark_wake_keep,
				   d->policy->dark_wake_max_usec);
	/* Number on from the kill log, so that a cycle id names one cycle there. */
	if (d->killlog)
		d->cycle.id = qj_killlog_highest_cycle(d->killlog);
	/* Automatic suspend is what qosjaild is for: hold time counts as preventing it. */
	qj_holds_set_suspend_wanted(d->holds, true, qj_daemon_now());
	qj_daemon_logind_follow_policy(d);
	*ret = d;
	return 0;
fail:
	qj_daemon_free(d);
	return r;
}

int qj_daemon_step(struct qj_daemon *d, int timeout_ms)
{
	int n;

	if (!d->started) {
		log_info("qosjaild %s ready, listening", QJ_VERSION);
		qj_daemon_write_metrics(
			d); /* the collector sees the daemon before its first cycle */
		qj_daemon_holds_changed(d); /* no holds yet: start the idle delay */
		qj_loop_flush(d->loop);
		d->started = true;
		/* The socket listens and the jail is set up (qj_daemon_new()): clients may come. */
		qj_notify_ready(&d->notify, &d->cycle, qj_holds_count(d->holds));
	}
	if (d->exiting)
		return -ECANCELED;
	n = qj_loop_step(d->loop, timeout_ms);
	if (n < 0)
		return log_error_errno(n, "epoll_wait failed: %m");
	qj_ipc_reap(d->ipc);
	/* Places, exec matching and reloads bump app_gen: a jailed inhibitor stops counting. */
	qj_logind_recheck(d->logind, false);
	qj_loop_flush(d->loop);
	if (qj_ipc_resume_usec(d->ipc) != USEC_INFINITY)
		rearm_timer(d); /* the listener paused: retry even if no client goes */
	return n;
}

int qj_daemon_run(struct qj_daemon *d)
{
	for (;;) {
		int r = qj_daemon_step(d, -1);

		if (r == -ECANCELED)
			return 0;
		if (r < 0)
			return r;
	}
}

bool qj_daemon_reads_running(const struct qj_daemon *d)
{
	return d->engine && qj_engine_reads_running(d->engine) > 0;
}

struct qj_daemon *qj_daemon_free(struct qj_daemon *d)
{
	if (!d)
		return NULL;
	d->exiting = true;
	/* Interrupts and joins a running write first: nothing suspends after we left. */
	d->power = qj_power_free(d->power);
	d->logind = qj_logind_free(d->logind);
	d->logind_idle = qj_logind_idle_free(d->logind_idle);
	d->ipc = qj_ipc_free(d->ipc);
	if (d->engine) {
		int r = qj_engine_restore(d->engine, "qosjaild exiting");

		if (r < 0)
			log_error_errno(r, "Failed to restore the jail on exit: %m");
		d->engine = qj_engine_free(d->engine);
	}
	d->killlog = qj_killlog_free(d->killlog);
	qj_holds_free(d->holds);
	qj_events_free(d->events);
	json_decref(d->waiters_cache);
	qj_policy_free(d->policy);
	free(d->policy_path);
	free(d->state_dir);
	free(d->metrics_path);
	free(d->metrics_base);
	qj_loop_timer_del(&d->timer);
	d->loop = qj_loop_free(d->loop);
	if (d->metrics_dfd >= 0)
		(void)close(d->metrics_dfd);
	for (int *fd = (int[]){ d->signal_src.fd, d->notify_src.fd, d->watchdog_src.fd },
		 *end = fd + 3;
	     fd < end; fd++)
		if (*fd >= 0)
			(void)close(*fd);
	free(d);
	return NULL;
}
