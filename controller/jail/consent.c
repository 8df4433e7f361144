// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Notify consent: processes that asked, through libqosjail, to hear SIGXCPU as "the
 * system wants to suspend"; bounded per app, kept until they exit.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

#include "jail-internal.h"

/* Forgets the consents of processes that exited. */
void qj_eng_consents_prune(struct qj_engine *e)
{
	for (size_t i = 0; i < e->n_consents;) {
		if (qj_pidfd_exited(e->consents[i].pidfd)) {
			(void)close(e->consents[i].pidfd);
			free(e->consents[i].app);
			e->consents[i] = e->consents[--e->n_consents];
		} else {
			i++;
		}
	}
}

/* Did process @pid, started at @start_time, consent?  (A reused pid did not.) */
bool qj_eng_consented(struct qj_engine *e, pid_t pid, uint64_t start_time)
{
	for (size_t i = 0; i < e->n_consents; i++)
		if (e->consents[i].pid == pid && e->consents[i].start_time == start_time)
			return !qj_pidfd_exited(e->consents[i].pidfd);
	return false;
}

int qj_engine_notify_consent(struct qj_engine *e, pid_t pid, int pidfd)
{
	_cleanup_free_ char *app = NULL;
	struct qj_proc_stat st;
	struct consent *v;
	size_t share = 0;
	int r, fd;

	if (pid <= 0 || pidfd < 0)
		return -EINVAL;
	r = qj_cgroup_app_of_pid(e->cg, pid, &app);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	if (r == 0)
		return -EPERM;
	/* Read after the membership: the pidfd says the pid still names the caller. */
	r = qj_proc_stat_read(pid, &st);
	if (r < 0 || qj_pidfd_exited(pidfd))
		return -ESRCH;
	qj_eng_consents_prune(e);
	if (qj_eng_consented(e, pid, st.start_time))
		return 0;
	for (size_t i = 0; i < e->n_consents; i++)
		share += strcmp(e->consents[i].app, app) == 0;
	if (share >= MAX_CONSENTS_PER_APP)
		return -ENOSPC;
	fd = fcntl(pidfd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return negative_errno();
	v = realloc(e->consents, (e->n_consents + 1) * sizeof(*v));
	if (!v) {
		(void)close(fd);
		return -ENOMEM;
	}
	e->consents = v;
	v[e->n_consents++] = (struct consent){
		.pid = pid, .pidfd = fd, .start_time = st.start_time, .app = TAKE_PTR(app)
	};
	/* A task of the running cycle hears it at its next rung. */
	for (size_t i = 0; i < e->n_tasks; i++)
		if (e->tasks[i].pid == pid && e->tasks[i].start_time == st.start_time)
			e->tasks[i].consents = true;
	log_debug("Process %d consents to the notify rung", pid);
	return 0;
}

void qj_eng_consents_free(struct qj_engine *e)
{
	for (size_t i = 0; i < e->n_consents; i++) {
		(void)close(e->consents[i].pidfd);
		free(e->consents[i].app);
	}
	free(e->consents);
	e->consents = NULL;
	e->n_consents = 0;
}
