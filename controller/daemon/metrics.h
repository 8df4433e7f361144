/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The daemon's counters across cycles (cycles by result, the quiesce duration
 * histogram, backend errors) and their text in the Prometheus exposition format
 * 0.0.4, for `qosjailctl metrics` and node_exporter's textfile collector.
 */
#ifndef QJ_METRICS_H
#define QJ_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "cycle.h"

struct qj_engine;
struct qj_holds;
struct qj_killlog;
struct qj_power;

/* Upper bounds of the quiesce duration histogram, seconds (+Inf is implied). */
#define QJ_METRICS_QUIESCE_BUCKETS                    \
	{                                             \
		0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60 \
	}
#define QJ_METRICS_N_QUIESCE_BUCKETS 9
/*
 * Bound of the text: the IPC reply carries it JSON-escaped (quotes, newlines) within
 * QJ_PROTO_MAX_MSG, and the file is the same text.
 */
#define QJ_METRICS_MAX_TEXT (32 * 1024)
/* Distinct backend errors counted apart; later ones share the "other" row. */
#define QJ_METRICS_MAX_ERRORS 16

struct qj_metrics {
	uint64_t cycles[_QJ_CYCLE_RESULT_MAX]; /* ended cycles by result */
	uint64_t quiesce_le[QJ_METRICS_N_QUIESCE_BUCKETS + 1]; /* per bucket, not cumulative */
	uint64_t quiesce_count;
	uint64_t quiesce_sum_usec;
	struct {
		int error; /* negative errno */
		uint64_t n;
	} backend_errors[QJ_METRICS_MAX_ERRORS];
	size_t n_backend_errors;
	uint64_t backend_errors_other;
};

/* Pure: count an ended cycle, a quiesce that reached its end, a failed backend step. */
void qj_metrics_cycle_ended(struct qj_metrics *m, enum qj_cycle_result r);
void qj_metrics_quiesced(struct qj_metrics *m, uint64_t usec);
void qj_metrics_backend_error(struct qj_metrics *m, int error);

/* What the metrics text is made of (the daemon's parts, read only; @engine may be NULL). */
struct qj_metrics_view {
	struct qj_holds *holds;
	struct qj_engine *engine;
	const struct qj_cycle *cycle;
	const struct qj_metrics *metrics;
	struct qj_power *power;
	struct qj_killlog *killlog; /* NULL: none */
};

/*
 * The daemon's metrics as exposition text (malloc()ed, NUL-terminated), at most
 * @max_len bytes: hold names beyond what fits are left out and counted in
 * qosjail_hold_names_omitted.  0 or negative errno.
 */
int qj_metrics_text(const struct qj_metrics_view *v, size_t max_len, char **ret, size_t *ret_len);

/*
 * The order hold names go out in, under the text's cap (pure): names a root-owned hold
 * keeps active first, then the other active names, then the rest, most recently changed
 * first.  One uid's flood of names must never hide root's hold.  *ret (malloc()ed) holds
 * the statistics indexes, *ret_n of them.  0 or -ENOMEM.
 */
int qj_metrics_name_order(const struct qj_holds *h, uint64_t t, size_t **ret, size_t *ret_n);

/*
 * The metrics file's directory, opened as the daemon keeps it (metrics-file.c): walked
 * from / without following a symlink in any component, every directory above it owned by
 * root (or the daemon's uid) and writable by nobody else, unless sticky (/tmp); the
 * directory itself may be another user's (node_exporter's textfile directory belongs to
 * prometheus).  The fd is held from then on: a directory swapped for a symlink later
 * changes nothing.  -ELOOP for a symlink or a non-directory on the way, -EPERM for a
 * directory another user could swap, -ENOENT; *ret_base (malloc()ed) is the file name.
 */
int qj_metrics_open_dir(const char *path, int *ret_dfd, char **ret_base);
/*
 * Writes @text as @base in @dfd atomically: a temporary file in the same directory,
 * fsync, rename over @base, fsync of the directory.  -ELOOP when @base is a symlink,
 * -EEXIST when it is something else than a regular file; nothing is written then.
 */
int qj_metrics_write_at(int dfd, const char *base, const char *text, size_t len);

#endif
