// SPDX-License-Identifier: LGPL-2.1-or-later
/* The rung-action table (see actions.h). */
#include <signal.h>
#include <string.h>
#include <strings.h>

#include "actions.h"
#include "util.h"

/* Stops, kills and freezes show in /proc and cgroup.events at once. */
#define CONFIRM_AT_ONCE_USEC (10 * USEC_PER_MSEC)
#define SIGBIT(s) (1ULL << ((s)-1))
/* A SIGTERM and a later SIGKILL both mean "dying": either pending is the same wait. */
#define DEATH_SIGS (SIGBIT(SIGTERM) | SIGBIT(SIGKILL))

static const struct qj_action_info actions[_QJ_ACTION_MAX] = {
	[QJ_ACTION_SIGXCPU] = { .name = "SIGXCPU",
				.old_log_name = "sigxcpu",
				.default_rung_name = "notify",
				.default_grace_usec = 2 * USEC_PER_SEC,
				.needs_handler = true,
				.pending_mask = SIGBIT(SIGXCPU) },
	[QJ_ACTION_SIGSTOP] = { .name = "SIGSTOP",
				.old_log_name = "sigstop",
				.default_rung_name = "stop",
				.default_grace_usec = 2 * USEC_PER_SEC,
				.confirm_usec = CONFIRM_AT_ONCE_USEC,
				.strike = true,
				.group = true,
				.pending_mask = SIGBIT(SIGSTOP) },
	[QJ_ACTION_SIGTERM] = { .name = "SIGTERM",
				.old_log_name = "sigterm",
				.default_rung_name = "term",
				.default_grace_usec = 3 * USEC_PER_SEC,
				.strike = true,
				.group = true,
				.pending_mask = DEATH_SIGS },
	[QJ_ACTION_SIGKILL] = { .name = "SIGKILL",
				.old_log_name = "sigkill",
				.default_rung_name = "kill",
				.default_grace_usec = 1 * USEC_PER_SEC,
				.confirm_usec = CONFIRM_AT_ONCE_USEC,
				.strike = true,
				.group = true,
				.pending_mask = DEATH_SIGS },
	[QJ_ACTION_FREEZE] = { .name = "freeze",
			       .default_rung_name = "freeze",
			       .default_grace_usec = 2 * USEC_PER_SEC,
			       .confirm_usec = CONFIRM_AT_ONCE_USEC,
			       .strike = true,
			       .group = true },
};

const struct qj_action_info *qj_action_info(enum qj_action a)
{
	return a >= 0 && a < _QJ_ACTION_MAX ? &actions[a] : NULL;
}

void qj_action_list(char *buf, size_t size, const char *last_sep)
{
	size_t n = 0;

	if (size == 0)
		return;
	buf[0] = '\0';
	for (int i = 0; i < _QJ_ACTION_MAX && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%s",
				      i == 0		      ? "" :
				      i == _QJ_ACTION_MAX - 1 ? last_sep :
								", ",
				      actions[i].name);
}

const char *qj_action_to_string(enum qj_action a)
{
	return a >= 0 && a < _QJ_ACTION_MAX ? actions[a].name : NULL;
}

enum qj_action qj_action_from_string(const char *s)
{
	if (!s)
		return _QJ_ACTION_INVALID;
	for (int i = 0; i < _QJ_ACTION_MAX; i++) {
		const char *n = actions[i].name;

		if (strcasecmp(s, n) == 0)
			return i;
		if (strncmp(n, "SIG", 3) == 0 && strcasecmp(s, n + 3) == 0)
			return i;
	}
	return _QJ_ACTION_INVALID;
}
