// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The per-app state of the engine: looked up by name, and the rung actions counted
 * against each app since the daemon started (qosjailctl metrics).
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"

#include "jail-internal.h"

struct app_state *qj_eng_app_state(struct qj_engine *e, const char *name)
{
	struct app_state *v;

	for (size_t i = 0; i < e->n_apps; i++)
		if (strcmp(e->apps[i].name, name) == 0)
			return &e->apps[i];
	v = realloc(e->apps, (e->n_apps + 1) * sizeof(*v));
	if (!v)
		return NULL;
	e->apps = v;
	memset(&v[e->n_apps], 0, sizeof(*v));
	v[e->n_apps].name = strdup(name);
	if (!v[e->n_apps].name)
		return NULL;
	return &v[e->n_apps++];
}

/* One more action of @rung against @a; not counted (logged) when out of memory. */
void qj_eng_count_action(struct app_state *a, const struct qj_rung *rung)
{
	struct action_count *v;

	for (size_t i = 0; i < a->n_counts; i++)
		if (a->counts[i].action == rung->action &&
		    strcmp(a->counts[i].rung, rung->name) == 0) {
			a->counts[i].n++;
			return;
		}
	v = realloc(a->counts, (a->n_counts + 1) * sizeof(*v));
	if (!v)
		goto oom;
	a->counts = v;
	v[a->n_counts] =
		(struct action_count){ .rung = strdup(rung->name), .action = rung->action, .n = 1 };
	if (!v[a->n_counts].rung)
		goto oom;
	a->n_counts++;
	return;
oom:
	log_warning("Out of memory counting an action of app %s, ignoring", a->name);
}

/* The cycle ended (restored or kept): each app's strike in it counts, and waits for fsync. */
void qj_eng_count_strikes(struct qj_engine *e)
{
	for (size_t i = 0; i < e->n_apps; i++)
		if (e->apps[i].struck) {
			e->apps[i].undo.strikes++;
			e->strikes_dirty = true;
			e->apps[i].struck = false;
		}
}
