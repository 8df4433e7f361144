/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* qosjailctl report --html: the data the verb gathers (ctl-report.c) and the page drawn from it. */
#ifndef QJ_CTL_REPORT_HTML_H
#define QJ_CTL_REPORT_HTML_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct ctl_report_data {
	uint64_t since_usec; /* CLOCK_REALTIME start of the page; 0: the oldest record */
	uint64_t now_usec; /* CLOCK_REALTIME end of the page */
	json_t *records; /* kill log records, oldest first */
	json_t *history; /* the daemon's hold history (qj_hold_history()), NULL when unknown */
	json_t *holds; /* the daemon's hold statistics (qj_holds()), NULL when unknown */
	/* What the page drew, filled by ctl_report_html(). */
	size_t n_cycles, n_actions, n_hold_periods;
};

/*
 * Writes the page: one self-contained HTML document, no script, no network (its
 * Content-Security-Policy forbids both), every string from the log or the daemon
 * escaped.  0 or negative errno.
 */
int ctl_report_html(FILE *f, struct ctl_report_data *d);

#endif
