/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One escaping helper for text that comes from someone else (process names and
 * executables read from /proc, hold names and reasons sent by clients) on its
 * way to a reader: escaped, never dropped.
 */
#ifndef QJ_ESCAPE_H
#define QJ_ESCAPE_H

#include <jansson.h>
#include <stddef.h>

enum {
	/* Only bytes that are not valid UTF-8 change, each to \xNN: JSON can carry the rest. */
	QJ_ESCAPE_UTF8 = 0,
	/*
	 * For a terminal: also control characters (C0 as \n \r \t \e or \xNN, DEL,
	 * C1 as \u0080..\u009f), bidirectional overrides and line separators as
	 * \uNNNN, and the backslash as \\, so what is shown cannot move the cursor,
	 * recolour or forge a line, and reads back unambiguously.
	 */
	QJ_ESCAPE_TERMINAL = 1 << 0,
};

/*
 * Writes @s escaped into @buf (NUL-terminated when @size > 0, cut only between
 * escapes) and returns the length the whole of it needs, like snprintf().
 */
size_t qj_escape_buf(const char *s, unsigned flags, char *buf, size_t size);
/* A malloc()ed escaped copy of @s; NULL on OOM. */
char *qj_escape(const char *s, unsigned flags);
/* A JSON string of @s with invalid UTF-8 escaped (json_null() for NULL); NULL on OOM. */
json_t *qj_json_string_escaped(const char *s);
/*
 * Escapes, in place, every string value in @j (objects and arrays walked, keys
 * left): what qosjailctl does to a reply before printing any of it for people.
 */
int qj_json_escape_strings(json_t *j, unsigned flags);

#endif
