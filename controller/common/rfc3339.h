/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* RFC 3339 timestamps, as the kill log writes them (UTC, milliseconds). */
#ifndef QJ_RFC3339_H
#define QJ_RFC3339_H

#include <stddef.h>
#include <stdint.h>

/* "2026-12-03T09:05:41.123Z" (UTC, milliseconds) into @buf (at least 32 bytes). */
int qj_format_rfc3339(uint64_t realtime_usec, char *buf, size_t size);
/* Parses RFC3339 with optional fraction and Z or +HH:MM offset. */
int qj_parse_rfc3339(const char *s, uint64_t *ret_usec);

#endif
