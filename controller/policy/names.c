// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The spellings of the policy's enums other than the rungs (actions.c has those): the
 * power backends and the trust classes, one table each, read by the schema, the dump,
 * the daemon and the CLI.
 */
#include <string.h>

#include "policy.h"

static const char *const backend_names[_QJ_BACKEND_MAX] = {
	[QJ_BACKEND_AUTO] = "auto",
	[QJ_BACKEND_QOS] = "qos",
	[QJ_BACKEND_WAKEUP_COUNT] = "wakeup-count",
	[QJ_BACKEND_MEM] = "mem",
	[QJ_BACKEND_FREEZE] = "freeze",
	[QJ_BACKEND_DRY_RUN] = "dry-run",
};

static const char *const trust_names[_QJ_TRUST_MAX] = {
	[QJ_TRUST_JAILED] = "jailed",
	[QJ_TRUST_TRUSTED] = "trusted",
};

const char *qj_backend_to_string(enum qj_backend b)
{
	return b >= 0 && b < _QJ_BACKEND_MAX ? backend_names[b] : NULL;
}

enum qj_backend qj_backend_from_string(const char *s)
{
	for (int i = 0; s && i < _QJ_BACKEND_MAX; i++)
		if (strcmp(s, backend_names[i]) == 0)
			return i;
	return _QJ_BACKEND_INVALID;
}

const char *qj_trust_to_string(enum qj_trust t)
{
	return t >= 0 && t < _QJ_TRUST_MAX ? trust_names[t] : NULL;
}

enum qj_trust qj_trust_from_string(const char *s)
{
	for (int i = 0; s && i < _QJ_TRUST_MAX; i++)
		if (strcmp(s, trust_names[i]) == 0)
			return i;
	return _QJ_TRUST_INVALID;
}
