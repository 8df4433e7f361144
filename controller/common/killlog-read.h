/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Reading the kill log: the CLI's filters, and the last cycle id a restarted writer continues from. */
#ifndef QJ_KILLLOG_READ_H
#define QJ_KILLLOG_READ_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct qj_killlog_filter {
	const char *app;
	pid_t pid; /* 0: any */
	const char *action;
	bool has_cycle;
	uint64_t cycle;
	uint64_t since_usec; /* 0: any */
};

/*
 * Calls @cb for every line of @f that parses and matches @flt (NULL: all);
 * a negative return from @cb stops the walk and is returned.  Lines that are
 * not JSON objects are skipped.  Returns the number of matches.
 */
int qj_killlog_read(FILE *f, const struct qj_killlog_filter *flt,
		    int (*cb)(json_t *rec, void *userdata), void *userdata);

/*
 * The highest "cycle" among the last 64 KiB of records in @fd (0 when none):
 * a restarted daemon numbers its cycles on from there, so a cycle id names
 * one cycle in the log.
 */
int qj_killlog_last_cycle(int fd, uint64_t *ret);

#endif
