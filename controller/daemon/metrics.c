// SPDX-License-Identifier: LGPL-2.1-or-later
/* The daemon's counters and their Prometheus exposition text (see metrics.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "engine.h"
#include "escape.h"
#include "holds.h"
#include "killlog.h"
#include "metrics.h"
#include "policy.h"
#include "util.h"

static const double quiesce_buckets[QJ_METRICS_N_QUIESCE_BUCKETS] = QJ_METRICS_QUIESCE_BUCKETS;

void qj_metrics_cycle_ended(struct qj_metrics *m, enum qj_cycle_result r)
{
	if (r > QJ_CYCLE_RESULT_NONE && r < _QJ_CYCLE_RESULT_MAX)
		m->cycles[r]++;
}

void qj_metrics_quiesced(struct qj_metrics *m, uint64_t usec)
{
	size_t i = 0;

	while (i < QJ_METRICS_N_QUIESCE_BUCKETS && (double)usec / 1e6 > quiesce_buckets[i])
		i++;
	m->quiesce_le[i]++;
	m->quiesce_count++;
	m->quiesce_sum_usec += usec;
}

void qj_metrics_backend_error(struct qj_metrics *m, int error)
{
	for (size_t i = 0; i < m->n_backend_errors; i++)
		if (m->backend_errors[i].error == error) {
			m->backend_errors[i].n++;
			return;
		}
	if (m->n_backend_errors == QJ_METRICS_MAX_ERRORS) {
		m->backend_errors_other++;
		return;
	}
	m->backend_errors[m->n_backend_errors].error = error;
	m->backend_errors[m->n_backend_errors++].n = 1;
}

/* ---- exposition text ---- */

/*
 * A label value: hold names are any bytes a client chose.  Escaped as qosjailctl holds
 * shows them (invalid UTF-8, control characters and the backslash as \xNN, \e, \\...:
 * the text goes to terminals too), then backslash, double quote and newline escaped
 * as the exposition format says.
 */
static void put_label(FILE *f, const char *s)
{
	_cleanup_free_ char *u = qj_escape(s, QJ_ESCAPE_TERMINAL);

	for (const char *p = u ? u : "(out of memory)"; *p; p++) {
		if (*p == '\\')
			fputs("\\\\", f);
		else if (*p == '"')
			fputs("\\\"", f);
		else if (*p == '\n')
			fputs("\\n", f);
		else
			fputc(*p, f);
	}
}

static void put_family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void put_seconds(FILE *f, uint64_t usec)
{
	fprintf(f, "%llu.%06llu\n", (unsigned long long)(usec / USEC_PER_SEC),
		(unsigned long long)(usec % USEC_PER_SEC));
}

struct name_rank {
	size_t i; /* index of the name's statistics */
	int rank; /* 0 held by root now, 1 active, 2 inactive */
	uint64_t last_change_usec;
};

static int strcmp_ptr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int rank_cmp(const void *a, const void *b)
{
	const struct name_rank *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank - y->rank;
	if (x->last_change_usec != y->last_change_usec)
		return x->last_change_usec > y->last_change_usec ? -1 : 1; /* recent first */
	return x->i < y->i ? -1 : x->i > y->i;
}

int qj_metrics_name_order(const struct qj_holds *h, uint64_t t, size_t **ret, size_t *ret_n)
{
	size_t n = qj_holds_n_stats(h), n_root = 0;
	_cleanup_free_ const char **root = NULL;
	_cleanup_free_ struct name_rank *v = calloc(n ? n : 1, sizeof(*v));
	size_t *order = calloc(n ? n : 1, sizeof(*order));
	struct qj_hold_stats s;

	root = calloc(qj_holds_count(h) + 1, sizeof(*root));
	if (!v || !order || !root) {
		free(order);
		return -ENOMEM;
	}
	for (size_t i = 0; qj_holds_get(h, i); i++)
		if (qj_holds_get(h, i)->owner.uid == 0)
			root[n_root++] = qj_holds_get(h, i)->name;
	qsort(root, n_root, sizeof(*root), strcmp_ptr);
	for (size_t i = 0; i < n && qj_holds_stats_at(h, i, t, &s) == 0; i++)
		v[i] = (struct name_rank){
			.i = i,
			.rank = !s.active						  ? 2 :
				bsearch(&s.name, root, n_root, sizeof(*root), strcmp_ptr) ? 0 :
											    1,
			.last_change_usec = s.last_change_usec,
		};
	qsort(v, n, sizeof(*v), rank_cmp);
	for (size_t i = 0; i < n; i++)
		order[i] = v[i].i;
	*ret = order;
	*ret_n = n;
	return 0;
}

/* One family with a "name" label per hold name, the first @max names in @order. */
static void put_hold_family(FILE *f, const struct qj_metrics_view *v, uint64_t t,
			    const size_t *order, size_t max, const char *name, const char *type,
			    const char *help, int which)
{
	struct qj_hold_stats s;

	put_family(f, name, type, help);
	for (size_t k = 0; k < max && qj_holds_stats_at(v->holds, order[k], t, &s) == 0; k++) {
		fprintf(f, "%s{name=\"", name);
		put_label(f, s.name);
		fputs("\"} ", f);
		switch (which) {
		case 0:
			fprintf(f, "%u\n", s.active);
			break;
		case 1:
			fprintf(f, "%" PRIu64 "\n", s.active_count);
			break;
		case 2:
			put_seconds(f, s.total_time_usec);
			break;
		case 3:
			put_seconds(f, s.prevent_suspend_time_usec);
			break;
		case 4:
			put_seconds(f, s.max_time_usec);
			break;
		default:
			fprintf(f, "%" PRIu64 "\n", s.expire_count);
			break;
		}
	}
}

static int put_action(const char *app, const char *rung, enum qj_action action, uint64_t n,
		      void *userdata)
{
	FILE *f = userdata;

	fputs("qosjail_actions_total{app=\"", f);
	put_label(f, app);
	fputs("\",rung=\"", f);
	put_label(f, rung);
	fprintf(f, "\",action=\"%s\"} %" PRIu64 "\n", qj_action_to_string(action), n);
	return 0;
}

static void put_engine(FILE *f, const struct qj_metrics_view *v)
{
	const char *app;
	unsigned n;

	put_family(f, "qosjail_actions_total", "counter",
		   "Rung actions taken against jailed apps (their tasks or groups) since start.");
	if (v->engine)
		(void)qj_engine_foreach_action_count(v->engine, put_action, f);
	put_family(f, "qosjail_jail_tasks", "gauge", "Processes in each jailed app's group.");
	for (size_t i = 0; v->engine; i++) {
		int r = qj_engine_app_tasks(v->engine, i, &app, &n);

		if (r == -ENOENT)
			break;
		if (r <= 0)
			continue; /* trusted (no group), or unreadable: no row rather than a wrong one */
		fputs("qosjail_jail_tasks{app=\"", f);
		put_label(f, app);
		fprintf(f, "\"} %u\n", n);
	}
}

static void put_cycles(FILE *f, const struct qj_metrics_view *v)
{
	struct qj_power_stats ps;
	uint64_t cum = 0;

	put_family(f, "qosjail_cycle_state", "gauge", "1 for the suspend cycle's current state.");
	for (int s = 0; s < _QJ_CYCLE_STATE_MAX; s++)
		fprintf(f, "qosjail_cycle_state{state=\"%s\"} %d\n",
			qj_cycle_state_to_string((enum qj_cycle_state)s), v->cycle->state == s);
	put_family(f, "qosjail_cycles_total", "counter",
		   "Suspend cycles ended since start, by how they ended.");
	for (int r = QJ_CYCLE_RESULT_NONE + 1; r < _QJ_CYCLE_RESULT_MAX; r++)
		fprintf(f, "qosjail_cycles_total{result=\"%s\"} %" PRIu64 "\n",
			qj_cycle_result_to_string((enum qj_cycle_result)r), v->metrics->cycles[r]);
	put_family(f, "qosjail_quiesce_duration_seconds", "histogram",
		   "Time from the start of a quiesce until every jailed task was blocked.");
	for (size_t i = 0; i <= QJ_METRICS_N_QUIESCE_BUCKETS; i++) {
		cum += v->metrics->quiesce_le[i];
		if (i < QJ_METRICS_N_QUIESCE_BUCKETS)
			fprintf(f,
				"qosjail_quiesce_duration_seconds_bucket{le=\"%g\"} %" PRIu64 "\n",
				quiesce_buckets[i], cum);
		else
			fprintf(f,
				"qosjail_quiesce_duration_seconds_bucket{le=\"+Inf\"} %" PRIu64
				"\n",
				cum);
	}
	fputs("qosjail_quiesce_duration_seconds_sum ", f);
	put_seconds(f, v->metrics->quiesce_sum_usec);
	fprintf(f, "qosjail_quiesce_duration_seconds_count %" PRIu64 "\n",
		v->metrics->quiesce_count);
	put_family(f, "qosjail_backend_errors_total", "counter",
		   "Failed suspend writes (or wakeup count reads) of the power backend, by errno.");
	for (size_t i = 0; i < v->metrics->n_backend_errors; i++)
		fprintf(f, "qosjail_backend_errors_total{error=\"%s\"} %" PRIu64 "\n",
			strerrorname_np(-v->metrics->backend_errors[i].error) ?: "unknown",
			v->metrics->backend_errors[i].n);
	if (v->metrics->backend_errors_other)
		fprintf(f, "qosjail_backend_errors_total{error=\"other\"} %" PRIu64 "\n",
			v->metrics->backend_errors_other);
	qj_power_get_stats(v->power, &ps);
	put_family(f, "qosjail_dry_runs_total", "counter",
		   "Suspends the dry-run backend pretended (no kernel write).");
	fprintf(f, "qosjail_dry_runs_total %" PRIu64 "\n", (uint64_t)ps.dry_runs);
}

static int metrics_text(const struct qj_metrics_view *v, size_t max_names, char **ret,
			size_t *ret_len)
{
	static const struct {
		const char *name, *type, *help;
	} hold_families[] = {
		{ "qosjail_hold_active", "gauge", "Holds of this name alive now." },
		{ "qosjail_hold_activations_total", "counter",
		  "Times the hold name went from inactive to active." },
		{ "qosjail_hold_seconds_total", "counter", "Time the hold name was active." },
		{ "qosjail_hold_prevent_suspend_seconds_total", "counter",
		  "Time the hold name was active while suspend was wanted." },
		{ "qosjail_hold_max_seconds", "gauge",
		  "Longest single active period of the name." },
		{ "qosjail_hold_expirations_total", "counter",
		  "Holds of the name ended by timeout." },
	};
	uint64_t t = now_usec(CLOCK_MONOTONIC);
	_cleanup_free_ size_t *order = NULL;
	size_t n_names = 0;
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	/* The names kept under the cap: root's holds first, then the active, then the recent. */
	r = qj_metrics_name_order(v->holds, t, &order, &n_names);
	if (r < 0)
		return r;
	if (max_names > n_names)
		max_names = n_names;
	f = open_memstream(&text, &len);
	if (!f)
		return -ENOMEM;
	put_family(f, "qosjail_holds", "gauge", "Live holds, over all names.");
	fprintf(f, "qosjail_holds %zu\n", qj_holds_count(v->holds));
	for (size_t i = 0; i < ARRAY_SIZE(hold_families); i++)
		put_hold_family(f, v, t, order, max_names, hold_families[i].name,
				hold_families[i].type, hold_families[i].help, (int)i);
	put_family(f, "qosjail_hold_names_omitted", "gauge",
		   "Hold names with statistics left out of this text to keep it bounded.");
	fprintf(f, "qosjail_hold_names_omitted %zu\n",
		n_names > max_names ? n_names - max_names : 0);
	put_cycles(f, v);
	put_engine(f, v);
	if (v->killlog) {
		struct qj_killlog_stats ks;

		qj_killlog_get_stats(v->killlog, &ks);
		put_family(f, "qosjail_kill_log_lost_records_total", "counter",
			   "Kill log records that could not be written (disk full, I/O error).");
		fprintf(f, "qosjail_kill_log_lost_records_total %" PRIu64 "\n", ks.lost);
	}
	if (fclose(f) != 0 || !text) {
		free(text);
		return -ENOMEM;
	}
	*ret = text;
	*ret_len = len;
	return 0;
}

int qj_metrics_text(const struct qj_metrics_view *v, size_t max_len, char **ret, size_t *ret_len)
{
	/* Hold names are the one part other users make grow: halved until the text fits. */
	for (size_t max_names = 128;; max_names /= 2) {
		char *text = NULL;
		size_t len = 0;
		int r = metrics_text(v, max_names, &text, &len);

		if (r < 0)
			return r;
		if (len <= max_len || max_names == 0) {
			*ret = text;
			*ret_len = len;
			return len <= max_len ? 0 : -EMSGSIZE;
		}
		free(text);
	}
}
