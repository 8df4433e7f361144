// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The timeline page of qosjailctl report, in the spirit of Android's Battery
 * Historian: a time axis with a row per hold name, a row of suspend cycles
 * (quiescing, suspending, resumed) and a row per app with its escalation actions,
 * then tables of hold statistics, cycles and actions.  Inline CSS and SVG only.
 *
 * Every element drawn for a cycle or an action carries data-* attributes (cycle id,
 * app, pid, action) so that a test, or a script of the operator's, can find them in
 * the DOM.  Every string that came from the log or the daemon (app, hold and process
 * names, reasons) is escaped twice: for a terminal (as qosjailctl shows it elsewhere)
 * and for HTML.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl-report-html.h"
#include "ctl.h"
#include "escape.h"
#include "killlog.h"
#include "rfc3339.h"
#include "util.h"

#define LABEL_W 200 /* the row names' column */
#define PLOT_W 1000
#define ROW_H 22
#define SECTION_H 26

struct cycle {
	uint64_t id;
	uint64_t begin, quiesced, end; /* quiesced 0: never (aborted, failed, running) */
	const char *result; /* the summary's reason: suspended, aborted, ...; NULL: no summary */
	json_t *summary;
};

struct period {
	const char *name;
	uint64_t start, end;
	bool expired, active;
};

struct page {
	struct ctl_report_data *d;
	FILE *f;
	uint64_t t0, t1;
	struct cycle *cycles;
	size_t n_cycles;
	struct period *periods;
	size_t n_periods;
	const char **apps, **names; /* distinct app names (actions), hold names (periods) */
	size_t n_apps, n_names;
	double y;
};

/* ---- text ---- */

/* @s for a page: terminal escapes (as qosjailctl shows names), then HTML's five. */
static void esc(FILE *f, const char *s)
{
	_cleanup_free_ char *t = qj_escape(s ? s : "", QJ_ESCAPE_TERMINAL);

	for (const char *p = t ? t : "(out of memory)"; *p; p++)
		switch (*p) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&#39;", f);
			break;
		default:
			fputc(*p, f);
		}
}

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

static long long num(const json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

static uint64_t ts_of(const json_t *rec)
{
	uint64_t t = 0;

	return qj_parse_rfc3339(str(rec, "ts"), &t) == 0 ? t : 0;
}

static void put_time(FILE *f, uint64_t t)
{
	char buf[40];

	if (qj_format_rfc3339(t, buf, sizeof(buf)) < 0)
		snprintf(buf, sizeof(buf), "?");
	fputs(buf, f);
}

static void put_duration(FILE *f, uint64_t usec)
{
	char buf[32];

	ctl_format_usec(usec, buf, sizeof(buf));
	fputs(buf, f);
}

/* An escalation action against a task or a group: the records that carry a rung. */
static bool is_action(const json_t *rec)
{
	return json_is_integer(json_object_get(rec, "rung"));
}

/* ---- gathering ---- */

static int add_name(const char ***v, size_t *n, const char *s)
{
	const char **nv;

	for (size_t i = 0; i < *n; i++)
		if (strcmp((*v)[i], s) == 0)
			return 0;
	nv = realloc(*v, (*n + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[(*n)++] = s;
	return 0;
}

static struct cycle *get_cycle(struct page *pg, uint64_t id)
{
	struct cycle *v;

	for (size_t i = 0; i < pg->n_cycles; i++)
		if (pg->cycles[i].id == id)
			return &pg->cycles[i];
	v = realloc(pg->cycles, (pg->n_cycles + 1) * sizeof(*v));
	if (!v)
		return NULL;
	pg->cycles = v;
	v[pg->n_cycles] = (struct cycle){ .id = id };
	return &v[pg->n_cycles++];
}

/*
 * Cycles from their summaries (written at the restore: ts is the end, begin_ts the
 * begin, quiesce_ms its quiesce when it got that far); a cycle with actions and
 * no summary yet runs still (or its summary was lost): it spans its records.
 */
static int gather_cycles(struct page *pg)
{
	size_t i;
	json_t *rec;

	json_array_foreach (pg->d->records, i, rec) {
		uint64_t t = ts_of(rec);
		struct cycle *c;

		if (!json_is_integer(json_object_get(rec, "cycle")) || !t)
			continue;
		c = get_cycle(pg, (uint64_t)num(rec, "cycle"));
		if (!c)
			return -ENOMEM;
		if (strcmp(str(rec, "action"), "summary") == 0) {
			uint64_t win = (uint64_t)num(rec, "window_ms") * USEC_PER_MSEC, begin = 0;

			c->summary = rec;
			c->result = str(rec, "reason");
			c->end = t;
			/*
			 * window_ms is CLOCK_MONOTONIC: it leaves the sleep out, so a cycle
			 * that slept 30 s would be drawn from 1 s before its end.  begin_ts
			 * is the wall clock the daemon noted at its begin; logs older than it
			 * have only the window.
			 */
			if (qj_parse_rfc3339(str(rec, "begin_ts"), &begin) == 0 && begin <= t)
				c->begin = begin;
			else
				c->begin = win < t ? t - win : t;
			c->quiesced = strcmp(str(rec, "outcome"), "quiesced") == 0 ?
					      c->begin + (uint64_t)num(rec, "quiesce_ms") *
								 USEC_PER_MSEC :
					      0;
			continue;
		}
		if (c->summary)
			continue;
		if (!c->begin || t < c->begin)
			c->begin = t;
		if (t > c->end)
			c->end = t;
	}
	for (i = 0; i < pg->n_cycles; i++)
		if (!pg->cycles[i].summary)
			pg->cycles[i].end = pg->d->now_usec;
	return 0;
}

static int add_period(struct page *pg, const json_t *p, bool active)
{
	struct period *v = realloc(pg->periods, (pg->n_periods + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	pg->periods = v;
	v[pg->n_periods++] = (struct period){
		.name = str(p, "name"),
		.start = (uint64_t)num(p, "start_usec"),
		.end = active ? pg->d->now_usec : (uint64_t)num(p, "end_usec"),
		.expired = json_is_true(json_object_get(p, "expired")),
		.active = active,
	};
	return add_name(&pg->names, &pg->n_names, str(p, "name"));
}

static int gather(struct page *pg)
{
	struct ctl_report_data *d = pg->d;
	size_t i;
	json_t *x;
	int r;

	r = gather_cycles(pg);
	if (r < 0)
		return r;
	json_array_foreach (d->records, i, x)
		if (is_action(x) && add_name(&pg->apps, &pg->n_apps, str(x, "app")) < 0)
			return -ENOMEM;
	json_array_foreach (json_object_get(d->history, "periods"), i, x)
		if ((!d->since_usec || (uint64_t)num(x, "end_usec") >= d->since_usec) &&
		    add_period(pg, x, false) < 0)
			return -ENOMEM;
	json_array_foreach (json_object_get(d->history, "active"), i, x)
		if (add_period(pg, x, true) < 0)
			return -ENOMEM;

	/* The axis: from --since (or the oldest thing drawn) to now. */
	pg->t1 = d->now_usec;
	pg->t0 = d->since_usec ? d->since_usec : pg->t1;
	if (!d->since_usec) {
		for (i = 0; i < pg->n_cycles; i++)
			if (pg->cycles[i].begin && pg->cycles[i].begin < pg->t0)
				pg->t0 = pg->cycles[i].begin;
		for (i = 0; i < pg->n_periods; i++)
			if (pg->periods[i].start < pg->t0)
				pg->t0 = pg->periods[i].start;
		json_array_foreach (d->records, i, x)
			if (ts_of(x) && ts_of(x) < pg->t0)
				pg->t0 = ts_of(x);
		pg->t0 -= (pg->t1 - pg->t0) / 50; /* a margin before the first event */
	}
	if (pg->t1 <= pg->t0)
		pg->t1 = pg->t0 + USEC_PER_SEC;
	return 0;
}

/* ---- drawing ---- */

static double x_of(const struct page *pg, uint64_t t)
{
	if (t < pg->t0)
		t = pg->t0;
	if (t > pg->t1)
		t = pg->t1;
	return LABEL_W + (double)(t - pg->t0) * PLOT_W / (double)(pg->t1 - pg->t0);
}

/* A bar from @a to @b on the current row, at least 2 px wide so a short one shows. */
static void put_bar(struct page *pg, uint64_t a, uint64_t b, double h)
{
	double x = x_of(pg, a), w = x_of(pg, b) - x;

	fprintf(pg->f, " x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"", x,
		pg->y + (ROW_H - h) / 2, w < 2 ? 2 : w, h);
}

static void put_row_label(struct page *pg, const char *label)
{
	fprintf(pg->f, "<text class=\"label\" x=\"%d\" y=\"%.1f\">", LABEL_W - 8,
		pg->y + ROW_H / 2 + 4);
	esc(pg->f, label);
	fputs("</text>\n", pg->f);
	fprintf(pg->f, "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>\n",
		LABEL_W, LABEL_W + PLOT_W, pg->y + ROW_H, pg->y + ROW_H);
}

static void put_section(struct page *pg, const char *title)
{
	fprintf(pg->f, "<text class=\"section\" x=\"4\" y=\"%.1f\">%s</text>\n", pg->y + 18, title);
	pg->y += SECTION_H;
}

static void put_axis(struct page *pg)
{
	const int n = 8;
	uint64_t range = pg->t1 - pg->t0;
	/* Of "2026-12-03T09:05:41.123Z": as much as tells the ticks apart. */
	int from = range > 86400 * USEC_PER_SEC ? 5 : 11, to = range > 86400 * USEC_PER_SEC ? 16 :
							       range > 60 * USEC_PER_SEC    ? 19 :
											      23;

	for (int i = 0; i <= n; i++) {
		uint64_t t = pg->t0 + (pg->t1 - pg->t0) * (uint64_t)i / n;
		char buf[40];
		double x = x_of(pg, t);

		(void)qj_format_rfc3339(t, buf, sizeof(buf));
		buf[to] = '\0';
		fprintf(pg->f,
			"<line class=\"tick\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"100%%\"/>"
			"<text class=\"tick\" x=\"%.1f\" y=\"%.1f\">%s</text>\n",
			x, x, pg->y + 18, x, pg->y + 14, buf + from);
	}
	pg->y += 24;
}

static void put_holds(struct page *pg)
{
	put_section(pg, pg->d->history ? "Holds" : "Holds (unknown: the daemon did not answer)");
	for (size_t k = 0; k < pg->n_names; k++) {
		put_row_label(pg, pg->names[k]);
		for (size_t i = 0; i < pg->n_periods; i++) {
			const struct period *p = &pg->periods[i];

			if (strcmp(p->name, pg->names[k]) != 0)
				continue;
			fputs("<rect class=\"hold", pg->f);
			fputs(p->active ? " active" : "", pg->f);
			fputs("\" data-hold=\"", pg->f);
			esc(pg->f, p->name);
			fputs("\"", pg->f);
			put_bar(pg, p->start, p->end, ROW_H - 6);
			fputs("><title>hold ", pg->f);
			esc(pg->f, p->name);
			fputs(": ", pg->f);
			put_time(pg->f, p->start);
			fputs(p->active ? " - still held, " : " - ", pg->f);
			if (!p->active)
				put_time(pg->f, p->end);
			fputs(" (", pg->f);
			put_duration(pg->f, p->end - p->start);
			fputs(p->expired ? ", expired)" : ")", pg->f);
			fputs("</title></rect>\n", pg->f);
			pg->d->n_hold_periods++;
		}
		pg->y += ROW_H;
	}
}

static void put_state(struct page *pg, const char *state, uint64_t a, uint64_t b, uint64_t id)
{
	fprintf(pg->f, "<rect class=\"state %s\" data-state=\"%s\"", state, state);
	put_bar(pg, a, b, ROW_H - 6);
	fprintf(pg->f, "><title>cycle %" PRIu64 " %s: ", id, state);
	put_time(pg->f, a);
	fputs(" (", pg->f);
	put_duration(pg->f, b - a);
	fputs(")</title></rect>\n", pg->f);
}

static void put_cycles(struct page *pg)
{
	put_section(pg, "Suspend cycles");
	put_row_label(pg, "quiesce / suspend");
	for (size_t i = 0; i < pg->n_cycles; i++) {
		const struct cycle *c = &pg->cycles[i];
		uint64_t qend = c->quiesced ? c->quiesced : c->end;

		fprintf(pg->f, "<g class=\"cycle\" data-cycle=\"%" PRIu64 "\" data-result=\"",
			c->id);
		esc(pg->f, c->result ? c->result : "running");
		fputs("\">\n", pg->f);
		put_state(pg, "quiescing", c->begin, qend, c->id);
		if (c->quiesced)
			put_state(pg, "suspending", c->quiesced, c->end, c->id);
		if (c->result) { /* the restore: resumed, or the end of an aborted cycle */
			fprintf(pg->f,
				"<rect class=\"state resumed\" data-state=\"resumed\" x=\"%.1f\" "
				"y=\"%.1f\" width=\"3\" height=\"%d\"><title>cycle %" PRIu64
				" ended: ",
				x_of(pg, c->end) - 1, pg->y + 1, ROW_H - 2, c->id);
			esc(pg->f, c->result);
			fputs(" at ", pg->f);
			put_time(pg->f, c->end);
			fputs("</title></rect>\n", pg->f);
		}
		fputs("</g>\n", pg->f);
		pg->d->n_cycles++;
	}
	pg->y += ROW_H;
}

/* A diamond for an action, a circle for a death after it, a bar for a gap. */
static void put_mark(struct page *pg, const json_t *rec, const char *cls)
{
	double x = x_of(pg, ts_of(rec)), y = pg->y + ROW_H / 2;

	fprintf(pg->f, "<g class=\"%s\" data-cycle=\"%lld\" data-app=\"", cls, num(rec, "cycle"));
	esc(pg->f, str(rec, "app"));
	fprintf(pg->f, "\" data-pid=\"%lld\" data-action=\"", num(rec, "pid"));
	esc(pg->f, str(rec, "action"));
	fputs("\" data-outcome=\"", pg->f);
	esc(pg->f, str(rec, "outcome"));
	fputs("\" data-ts=\"", pg->f);
	esc(pg->f, str(rec, "ts"));
	fputs("\">", pg->f);
	if (strcmp(cls, "action") == 0)
		fprintf(pg->f, "<path d=\"M%.1f %.1fl6 7l-6 7l-6 -7z\"/>", x, y - 7);
	else
		fprintf(pg->f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\"/>", x, y);
	fputs("<title>", pg->f);
	esc(pg->f, str(rec, "ts"));
	fprintf(pg->f, " cycle %lld: ", num(rec, "cycle"));
	esc(pg->f, str(rec, "action"));
	if (json_object_get(rec, "pid")) {
		fprintf(pg->f, " to %lld (", num(rec, "pid"));
		esc(pg->f, str(rec, "comm"));
		fputs(")", pg->f);
	} else if (json_object_get(rec, "tasks")) {
		fprintf(pg->f, " to the group (%lld tasks)", num(rec, "tasks"));
	}
	fputs(": ", pg->f);
	esc(pg->f, str(rec, "reason"));
	fputs(" - ", pg->f);
	esc(pg->f, str(rec, "outcome"));
	fputs("</title></g>\n", pg->f);
}

static void put_actions(struct page *pg)
{
	size_t i;
	json_t *rec;

	put_section(pg, "Escalation actions by app");
	for (size_t k = 0; k < pg->n_apps; k++) {
		put_row_label(pg, pg->apps[k]);
		json_array_foreach (pg->d->records, i, rec) {
			bool action = is_action(rec),
			     death = strcmp(str(rec, "action"), "exit") == 0;

			if ((!action && !death) || strcmp(str(rec, "app"), pg->apps[k]) != 0)
				continue;
			put_mark(pg, rec, action ? "action" : "exit");
			pg->d->n_actions += action;
		}
		pg->y += ROW_H;
	}
	if (pg->n_apps == 0) {
		put_row_label(pg, "(none)");
		pg->y += ROW_H;
	}
}

/* ---- tables ---- */

static void put_cell(FILE *f, const char *s)
{
	fputs("<td>", f);
	esc(f, s);
	fputs("</td>", f);
}

static void put_hold_table(struct page *pg)
{
	FILE *f = pg->f;
	size_t i;
	json_t *s;

	fputs("<h2>Hold statistics</h2>\n", f);
	if (!pg->d->holds) {
		fputs("<p>Unknown: the daemon did not answer.</p>\n", f);
		return;
	}
	fputs("<table class=\"holds\"><tr><th>name</th><th>active</th><th>activations</th>"
	      "<th>held</th><th>longest</th><th>prevented suspend</th><th>expired</th>"
	      "<th>periods drawn</th></tr>\n",
	      f);
	json_array_foreach (json_object_get(pg->d->holds, "stats"), i, s) {
		size_t drawn = 0;

		for (size_t k = 0; k < pg->n_periods; k++)
			drawn += strcmp(pg->periods[k].name, str(s, "name")) == 0;
		fputs("<tr data-hold=\"", f);
		esc(f, str(s, "name"));
		fputs("\">", f);
		put_cell(f, str(s, "name"));
		fprintf(f, "<td>%lld</td><td>%lld</td><td>", num(s, "active"),
			num(s, "active_count"));
		put_duration(f, (uint64_t)num(s, "total_time_usec"));
		fputs("</td><td>", f);
		put_duration(f, (uint64_t)num(s, "max_time_usec"));
		fputs("</td><td>", f);
		put_duration(f, (uint64_t)num(s, "prevent_suspend_time_usec"));
		fprintf(f, "</td><td>%lld</td><td>%zu</td></tr>\n", num(s, "expire_count"), drawn);
	}
	fputs("</table>\n", f);
}

static void put_cycle_table(struct page *pg)
{
	FILE *f = pg->f;

	fputs("<h2>Cycles</h2>\n<table class=\"cycles\"><tr><th>cycle</th><th>began</th>"
	      "<th>result</th><th>quiesce</th><th>whole cycle</th><th>actions</th>"
	      "<th>stopped</th><th>killed</th></tr>\n",
	      f);
	for (size_t i = 0; i < pg->n_cycles; i++) {
		const struct cycle *c = &pg->cycles[i];

		fprintf(f, "<tr data-cycle=\"%" PRIu64 "\"><td>%" PRIu64 "</td><td>", c->id, c->id);
		put_time(f, c->begin);
		fputs("</td>", f);
		put_cell(f, c->result ? c->result : "running (no summary yet)");
		fputs("<td>", f);
		if (c->quiesced)
			put_duration(f, c->quiesced - c->begin);
		else
			fputs("-", f);
		fputs("</td><td>", f);
		put_duration(f, c->end - c->begin);
		fprintf(f, "</td><td>%lld</td><td>%lld</td><td>%lld</td></tr>\n",
			num(c->summary, "actions"), num(c->summary, "stopped"),
			num(c->summary, "killed"));
	}
	fputs("</table>\n", f);
}

static void put_action_table(struct page *pg)
{
	FILE *f = pg->f;
	size_t i;
	json_t *rec;

	fputs("<h2>Actions</h2>\n<table class=\"actions\"><tr><th>time</th><th>cycle</th>"
	      "<th>app</th><th>pid</th><th>command</th><th>action</th><th>reason</th>"
	      "<th>CPU</th><th>outcome</th></tr>\n",
	      f);
	json_array_foreach (pg->d->records, i, rec) {
		char cpu[64];

		if (!is_action(rec))
			continue;
		snprintf(cpu, sizeof(cpu), "%lld/%lld ms", num(rec, "cpu_ms"),
			 num(rec, "window_ms"));
		fputs("<tr>", f);
		put_cell(f, str(rec, "ts"));
		fprintf(f, "<td>%lld</td>", num(rec, "cycle"));
		put_cell(f, str(rec, "app"));
		if (json_object_get(rec, "pid"))
			fprintf(f, "<td>%lld</td>", num(rec, "pid"));
		else
			fprintf(f, "<td>group of %lld</td>", num(rec, "tasks"));
		put_cell(f, str(rec, "comm"));
		put_cell(f, str(rec, "action"));
		put_cell(f, str(rec, "reason"));
		put_cell(f, cpu);
		put_cell(f, str(rec, "outcome"));
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
}

static const char style[] =
	"body{font:14px/1.4 system-ui,sans-serif;margin:16px;color:#222;background:#fff}"
	"h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:20px 0 6px}"
	"p.range{color:#555;margin:0 0 12px}"
	"svg{border:1px solid #ddd;background:#fcfcfc}"
	"text{font-size:12px;fill:#333}text.label{text-anchor:end}"
	"text.section{font-weight:bold;font-size:13px}text.tick{fill:#777;text-anchor:middle}"
	"line.tick{stroke:#eee}line.grid{stroke:#f0f0f0}"
	"rect.hold{fill:#4a90d9}rect.hold.active{fill:#2a60a9}"
	"rect.quiescing{fill:#f5a623}rect.suspending{fill:#7b61c4}rect.resumed{fill:#2e9e4f}"
	"g.action path{fill:#d0021b;stroke:#fff}"
	"g.action[data-action=SIGXCPU] path{fill:#f8c100}"
	"g.action[data-action=SIGSTOP] path{fill:#f07000}"
	"g.action[data-action=freeze] path{fill:#00a0c0}"
	"g.exit circle{fill:#555}"
	"g.action:hover path,g.exit:hover circle,rect:hover{opacity:.7}"
	"table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:2px 8px;"
	"text-align:left}th{background:#f3f3f3}"
	".legend span{display:inline-block;margin-right:14px}"
	".legend i{display:inline-block;width:12px;height:12px;margin-right:4px;"
	"vertical-align:-1px}";

int ctl_report_html(FILE *f, struct ctl_report_data *d)
{
	struct page pg = { .d = d, .f = f };
	int r;

	d->n_cycles = d->n_actions = d->n_hold_periods = 0;
	r = gather(&pg);
	if (r < 0)
		goto out;
	/* No script at all, and nothing from the network: the policy says so to the browser. */
	fprintf(f,
		"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
		"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
		"style-src 'unsafe-inline'\">\n"
		"<title>qosjail timeline</title>\n<style>%s</style></head>\n<body>\n"
		"<h1>qosjail timeline</h1>\n<p class=\"range\">",
		style);
	put_time(f, pg.t0);
	fputs(" to ", f);
	put_time(f, pg.t1);
	fputs(" (UTC)</p>\n<p class=\"legend\">"
	      "<span><i style=\"background:#4a90d9\"></i>hold</span>"
	      "<span><i style=\"background:#f5a623\"></i>quiescing</span>"
	      "<span><i style=\"background:#7b61c4\"></i>suspending</span>"
	      "<span><i style=\"background:#2e9e4f\"></i>resumed</span>"
	      "<span><i style=\"background:#f8c100\"></i>SIGXCPU</span>"
	      "<span><i style=\"background:#f07000\"></i>SIGSTOP</span>"
	      "<span><i style=\"background:#d0021b\"></i>SIGTERM, SIGKILL, other actions</span>"
	      "<span><i style=\"background:#00a0c0\"></i>freeze</span>"
	      "<span><i style=\"background:#555;border-radius:6px\"></i>died after</span></p>\n",
	      f);
	fprintf(f,
		"<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%zu\">\n",
		LABEL_W + PLOT_W + 50,
		(size_t)(24 + 3 * SECTION_H + 8) +
			ROW_H * (pg.n_names + 1 + (pg.n_apps ? pg.n_apps : 1)));
	put_axis(&pg);
	put_holds(&pg);
	put_cycles(&pg);
	put_actions(&pg);
	fputs("</svg>\n", f);
	put_hold_table(&pg);
	put_cycle_table(&pg);
	put_action_table(&pg);
	fputs("</body></html>\n", f);
	r = ferror(f) ? -EIO : 0;
out:
	free(pg.cycles);
	free(pg.periods);
	free(pg.apps);
	free(pg.names);
	return r;
}
