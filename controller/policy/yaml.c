// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The policy's YAML reader: libyaml events -> a small node tree that keeps each node's
 * exact mark.  libyaml has no schema and no limits, so aliases are counted here (alias
 * bombs), an anchor becomes visible only once its node is complete (no cycles), and every
 * node is owned by one flat list (shared alias targets are freed once).  Also the
 * diagnostics (FILE:LINE:COL: PATH: MESSAGE) and typed reads of nodes that report them.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "policy-internal.h"
#include "policy.h"
#include "util.h"

/* ---- diagnostics ------------------------------------------------------------------------ */

void qj_diags_done(struct qj_diags *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++) {
		free(d->v[i].path);
		free(d->v[i].message);
	}
	free(d->v);
	free(d->file);
	*d = (struct qj_diags){};
}

void qj_diags_print(const struct qj_diags *d, FILE *f)
{
	const char *file = d->file ? d->file : "<input>";

	for (size_t i = 0; i < d->n; i++) {
		const struct qj_diag *g = &d->v[i];

		if (g->path && g->path[0])
			fprintf(f, "%s:%u:%u: %s: %s\n", file, g->line, g->col, g->path,
				g->message);
		else
			fprintf(f, "%s:%u:%u: %s\n", file, g->line, g->col, g->message);
	}
}

/* ---- parse context and node tree -------------------------------------------------------- */

static int grow(void **v, size_t *alloc, size_t need, size_t size)
{
	size_t n;
	void *nv;

	if (need <= *alloc)
		return 0;
	n = *alloc ? *alloc * 2 : 8;
	if (n < need)
		n = need;
	nv = reallocarray(*v, n, size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*alloc = n;
	return 0;
}

/* Bounded, single-line copy of user text for a message: control bytes become '?'. */
const char *qj_yaml_printable(const char *s, size_t len, char buf[static QUOTE_MAX + 4])
{
	size_t n = len, o = 0;
	bool cut = false;

	if (n > QUOTE_MAX) {
		n = QUOTE_MAX;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--; /* do not cut a UTF-8 sequence */
		cut = true;
	}
	for (size_t i = 0; i < n; i++)
		buf[o++] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	if (cut) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = 0;
	return buf;
}

void qj_yaml_diag_pos(struct ctx *c, unsigned line0, unsigned col0, const char *fmt, ...)
{
	struct qj_diags *d = c->diags;
	struct qj_diag g = { .line = line0 + 1, .col = col0 + 1 }, *v;
	va_list ap;
	int r;

	if (c->error)
		return;
	/* Keep one slot for the "more errors" line. */
	if (d->n - c->first_diag >= QJ_POLICY_MAX_DIAGS - 1 && !c->diags_closing) {
		if (c->n_dropped++ == 0) {
			c->drop_line = line0;
			c->drop_col = col0;
		}
		return;
	}
	va_start(ap, fmt);
	r = vasprintf(&g.message, fmt, ap);
	va_end(ap);
	if (r < 0) {
		c->error = -ENOMEM;
		return;
	}
	g.path = strndup(c->path ? c->path : "", c->path_len);
	/* At most QJ_POLICY_MAX_DIAGS entries: growing one at a time is fine. */
	v = g.path ? reallocarray(d->v, d->n + 1, sizeof(*d->v)) : NULL;
	if (!v) {
		free(g.path);
		free(g.message);
		c->error = -ENOMEM;
		return;
	}
	d->v = v;
	d->v[d->n++] = g;
}

/* Stable sort by position (n <= QJ_POLICY_MAX_DIAGS), then the "more errors" line. */
void qj_yaml_diags_finish(struct ctx *c)
{
	struct qj_diags *d = c->diags;

	for (size_t i = c->first_diag + 1; i < d->n; i++) {
		struct qj_diag g = d->v[i];
		size_t j = i;

		for (;
		     j > c->first_diag && (d->v[j - 1].line > g.line ||
					   (d->v[j - 1].line == g.line && d->v[j - 1].col > g.col));
		     j--)
			d->v[j] = d->v[j - 1];
		d->v[j] = g;
	}
	if (c->n_dropped) {
		size_t n = c->n_dropped;

		c->diags_closing = true;
		c->path_len = 0;
		qj_yaml_diag_pos(c, c->drop_line, c->drop_col,
				 "too many errors; %zu more not shown", n);
	}
}

/* Appends to the key path; returns the length to restore with qj_yaml_path_pop(). */
size_t qj_yaml_path_push(struct ctx *c, const char *fmt, ...)
{
	size_t old = c->path_len;
	char buf[QUOTE_MAX + 32];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return old;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	if (grow((void **)&c->path, &c->a_path, c->path_len + (size_t)n + 1, 1) < 0) {
		c->error = -ENOMEM;
		return old;
	}
	memcpy(c->path + c->path_len, buf, (size_t)n);
	c->path_len += (size_t)n;
	c->path[c->path_len] = 0;
	return old;
}

size_t qj_yaml_path_push_key(struct ctx *c, const char *key, size_t len)
{
	char q[QUOTE_MAX + 4];

	return qj_yaml_path_push(c, "%s%s", c->path_len ? "." : "", qj_yaml_printable(key, len, q));
}

void qj_yaml_path_pop(struct ctx *c, size_t old)
{
	c->path_len = old;
	if (c->path)
		c->path[old] = 0;
}

static struct node *node_new(struct ctx *c, enum node_kind kind, const yaml_mark_t *m)
{
	struct node *n;

	if (grow((void **)&c->nodes, &c->a_nodes, c->n_nodes + 1, sizeof(*c->nodes)) < 0)
		return NULL;
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->kind = kind;
	n->line = (unsigned)m->line;
	n->col = (unsigned)m->column;
	c->nodes[c->n_nodes++] = n;
	return n;
}

static int node_append(struct node *parent, struct node *child)
{
	if (grow((void **)&parent->items, &parent->a_items, parent->n_items + 1,
		 sizeof(*parent->items)) < 0)
		return -ENOMEM;
	parent->items[parent->n_items++] = child;
	return 0;
}

static int anchor_add(struct ctx *c, const yaml_char_t *name, struct node *n)
{
	char *s;

	if (!name)
		return 0;
	s = strdup((const char *)name);
	if (!s ||
	    grow((void **)&c->anchors, &c->a_anchors, c->n_anchors + 1, sizeof(*c->anchors)) < 0) {
		free(s);
		return -ENOMEM;
	}
	c->anchors[c->n_anchors++] = (struct anchor){ s, n };
	return 0;
}

static struct node *anchor_find(struct ctx *c, const char *name)
{
	for (size_t i = c->n_anchors; i > 0; i--) /* a redefined anchor: the latest wins */
		if (strcmp(c->anchors[i - 1].name, name) == 0)
			return c->anchors[i - 1].node;
	return NULL;
}

void qj_yaml_ctx_done(struct ctx *c)
{
	for (size_t i = 0; i < c->n_nodes; i++) {
		free(c->nodes[i]->value);
		free(c->nodes[i]->items);
		free(c->nodes[i]);
	}
	free(c->nodes);
	for (size_t i = 0; i < c->n_anchors; i++)
		free(c->anchors[i].name);
	free(c->anchors);
	free(c->path);
}

/* Byte offset -> 0-based line and column (in characters, as libyaml counts them). */
void qj_yaml_offset_to_pos(const char *text, size_t len, size_t offset, unsigned *line,
			   unsigned *col)
{
	*line = *col = 0;
	for (size_t i = 0; i < offset && i < len; i++) {
		unsigned char b = (unsigned char)text[i];

		if (b == '\n' || (b == '\r' && (i + 1 >= len || text[i + 1] != '\n'))) {
			(*line)++;
			*col = 0;
		} else if ((b & 0xc0) != 0x80 && b != '\r') {
			(*col)++;
		}
	}
}

/*
 * Offset of the first byte that is not part of well-formed UTF-8 (RFC 3629: no overlong forms,
 * no surrogates, nothing above U+10FFFF), or @len.  libyaml detects the same but reports the
 * byte after a truncated sequence; this finds the sequence's first byte.
 */
size_t qj_yaml_utf8_invalid_offset(const unsigned char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned char b = s[i];
		size_t n;
		uint32_t cp;

		if (b < 0x80) {
			i++;
			continue;
		}
		if (b >= 0xc2 && b <= 0xdf) {
			n = 1;
			cp = b & 0x1f;
		} else if (b >= 0xe0 && b <= 0xef) {
			n = 2;
			cp = b & 0x0f;
		} else if (b >= 0xf0 && b <= 0xf4) {
			n = 3;
			cp = b & 0x07;
		} else {
			return i;
		}
		if (len - i <= n)
			return i;
		for (size_t k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return i;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return i;
		i += n + 1;
	}
	return len;
}

static void syntax_error(struct ctx *c, const yaml_parser_t *y)
{
	unsigned line, col;

	switch (y->error) {
	case YAML_MEMORY_ERROR:
		c->error = -ENOMEM;
		return;
	case YAML_READER_ERROR:
		qj_yaml_offset_to_pos(c->text, c->len, y->problem_offset, &line, &col);
		if (y->problem && strstr(y->problem, "control characters"))
			qj_yaml_diag_pos(c, line, col,
					 "control character 0x%02X is not allowed in a policy file",
					 (unsigned)y->problem_value);
		else if (y->problem_value >= 0)
			qj_yaml_diag_pos(
				c, line, col,
				"not valid UTF-8 (%s, byte 0x%02X); a policy file must be UTF-8 text",
				y->problem ? y->problem : "invalid input",
				(unsigned)y->problem_value & 0xff);
		else
			qj_yaml_diag_pos(c, line, col,
					 "not valid UTF-8 (%s); a policy file must be UTF-8 text",
					 y->problem ? y->problem : "invalid input");
		return;
	default:
		if (y->context)
			qj_yaml_diag_pos(c, (unsigned)y->problem_mark.line,
					 (unsigned)y->problem_mark.column,
					 "syntax error: %s (%s at %u:%u)",
					 y->problem ? y->problem : "unknown", y->context,
					 (unsigned)y->context_mark.line + 1,
					 (unsigned)y->context_mark.column + 1);
		else
			qj_yaml_diag_pos(c, (unsigned)y->problem_mark.line,
					 (unsigned)y->problem_mark.column, "syntax error: %s",
					 y->problem ? y->problem : "unknown");
		return;
	}
}

/* A scalar's node, its text copied; NULL or a node without a value: out of memory. */
static struct node *scalar_node(struct ctx *c, const yaml_event_t *ev)
{
	struct node *n = node_new(c, NODE_SCALAR, &ev->start_mark);

	if (!n)
		return NULL;
	n->value = malloc(ev->data.scalar.length + 1);
	if (!n->value)
		return n;
	memcpy(n->value, ev->data.scalar.value, ev->data.scalar.length);
	n->value[ev->data.scalar.length] = 0;
	n->len = ev->data.scalar.length;
	n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	return n;
}

/*
 * An alias's node: its anchor's target, or NODE_BAD (diagnosed) for an unknown anchor or
 * one alias past the limit that stops alias bombs.  NULL: out of memory.
 */
static struct node *alias_node(struct ctx *c, const yaml_event_t *ev)
{
	const char *name = (const char *)ev->data.alias.anchor;
	struct node *target = NULL, *n;

	if (++c->n_aliases <= QJ_POLICY_MAX_ALIASES)
		target = anchor_find(c, name);
	n = node_new(c, target ? NODE_ALIAS : NODE_BAD, &ev->start_mark);
	if (!n)
		return NULL;
	n->target = target;
	if (c->n_aliases == QJ_POLICY_MAX_ALIASES + 1)
		diag(c, n, "more than %d aliases; aliases are limited to stop alias bombs",
		     QJ_POLICY_MAX_ALIASES);
	else if (!target && c->n_aliases <= QJ_POLICY_MAX_ALIASES) {
		char q[QUOTE_MAX + 4];

		diag(c, n, "alias '*%s' refers to no anchor defined before it",
		     qj_yaml_printable(name, strlen(name), q));
	}
	return n;
}

/*
 * Builds the tree of the first document.  Returns 1 with *ret_root set (NULL for a stream
 * without documents) when the schema walk may run, 0 after a fatal diagnostic (syntax,
 * encoding, nesting), -ENOMEM.
 */
int qj_yaml_build_tree(struct ctx *c, struct node **ret_root)
{
	struct node *stack[MAX_DEPTH];
	char *stack_anchor[MAX_DEPTH];
	struct node *root = NULL;
	yaml_parser_t y;
	unsigned n_docs = 0;
	size_t depth = 0;
	int r = 1;

	if (!yaml_parser_initialize(&y))
		return -ENOMEM;
	yaml_parser_set_input_string(&y, (const unsigned char *)(c->text ?: ""), c->len);
	yaml_parser_set_encoding(&y, YAML_UTF8_ENCODING); /* no UTF-16 guessing: UTF-8 only */

	for (bool done = false; !done && r > 0 && !c->error;) {
		yaml_event_t ev;
		struct node *n = NULL;
		const yaml_char_t *anchor = NULL;

		if (!yaml_parser_parse(&y, &ev)) {
			syntax_error(c, &y);
			r = 0;
			break;
		}
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_DOCUMENT_START_EVENT:
			if (++n_docs > 1) {
				qj_yaml_diag_pos(
					c, (unsigned)ev.start_mark.line,
					(unsigned)ev.start_mark.column,
					"a second YAML document; a policy file holds exactly one");
				done = true; /* walk the first one */
			}
			break;
		case YAML_SCALAR_EVENT:
			n = scalar_node(c, &ev);
			anchor = ev.data.scalar.anchor;
			break;
		case YAML_ALIAS_EVENT:
			n = alias_node(c, &ev);
			break;
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			n = node_new(c, ev.type == YAML_SEQUENCE_START_EVENT ? NODE_SEQ : NODE_MAP,
				     &ev.start_mark);
			if (!n)
				break;
			if (depth == MAX_DEPTH) {
				diag(c, n, "nested more than %d levels deep", MAX_DEPTH);
				r = 0;
			}
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			assert(depth > 0);
			depth--;
			/* Only now may an alias refer to it: no cycles. */
			if (stack_anchor[depth] &&
			    anchor_add(c, (const yaml_char_t *)stack_anchor[depth], stack[depth]) <
				    0)
				c->error = -ENOMEM;
			free(stack_anchor[depth]);
			break;
		default:
			break;
		}
		if (!c->error && r > 0 &&
		    (ev.type == YAML_SCALAR_EVENT || ev.type == YAML_ALIAS_EVENT ||
		     ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT)) {
			if (!n || (n->kind == NODE_SCALAR && !n->value))
				c->error = -ENOMEM;
			else if (depth == 0)
				root = n;
			else if (node_append(stack[depth - 1], n) < 0)
				c->error = -ENOMEM;
			if (!c->error && ev.type == YAML_SCALAR_EVENT &&
			    anchor_add(c, anchor, n) < 0)
				c->error = -ENOMEM;
			if (!c->error && (ev.type == YAML_SEQUENCE_START_EVENT ||
					  ev.type == YAML_MAPPING_START_EVENT)) {
				const yaml_char_t *a = ev.type == YAML_SEQUENCE_START_EVENT ?
							       ev.data.sequence_start.anchor :
							       ev.data.mapping_start.anchor;

				stack_anchor[depth] = a ? strdup((const char *)a) : NULL;
				if (a && !stack_anchor[depth])
					c->error = -ENOMEM;
				stack[depth++] = n;
			}
		}
		yaml_event_delete(&ev);
	}
	while (depth > 0)
		free(stack_anchor[--depth]);
	yaml_parser_delete(&y);
	if (c->error)
		return c->error;
	*ret_root = root;
	return r;
}

/* ---- schema walk: node helpers ---------------------------------------------------------- */

struct node *qj_yaml_deref(struct node *n)
{
	while (n && n->kind == NODE_ALIAS)
		n = n->target;
	return n;
}

/* The value of @key in mapping @map, for positions of cross-field errors; NULL if absent. */
struct node *qj_yaml_map_get(struct node *map, const char *key)
{
	map = qj_yaml_deref(map);
	for (size_t m = 0; map->kind == NODE_MAP && m + 1 < map->n_items; m += 2) {
		struct node *k = qj_yaml_deref(map->items[m]);

		if (k->kind == NODE_SCALAR && strcmp(k->value, key) == 0)
			return qj_yaml_deref(map->items[m + 1]);
	}
	return NULL;
}

bool qj_yaml_is_null(const struct node *n)
{
	return n->kind == NODE_SCALAR && n->plain &&
	       (n->len == 0 || strcmp(n->value, "~") == 0 || strcmp(n->value, "null") == 0 ||
		strcmp(n->value, "Null") == 0 || strcmp(n->value, "NULL") == 0);
}

/* What the user wrote, for "expected X, got Y". */
const char *qj_yaml_describe(const struct node *n, char buf[static QUOTE_MAX + 16])
{
	char q[QUOTE_MAX + 4];

	switch (n->kind) {
	case NODE_SEQ:
		return "a list";
	case NODE_MAP:
		return "a mapping";
	case NODE_SCALAR:
		if (qj_yaml_is_null(n))
			return "nothing (null)";
		snprintf(buf, QUOTE_MAX + 16, "%s'%s'", n->plain ? "" : "the quoted string ",
			 qj_yaml_printable(n->value, n->len, q));
		return buf;
	default:
		return "an invalid value";
	}
}

bool qj_yaml_expect_kind(struct ctx *c, struct node *n, enum node_kind kind, const char *what)
{
	char buf[QUOTE_MAX + 16];

	if (n->kind == NODE_BAD)
		return false;
	if (n->kind == kind && !(kind == NODE_SCALAR && qj_yaml_is_null(n)))
		return true;
	diag(c, n, "expected %s, got %s", what, qj_yaml_describe(n, buf));
	return false;
}

/*
 * Control characters (C0, DEL, C1 such as NEL), Unicode line and paragraph separators and the
 * noncharacters U+FFFE/U+FFFF, reachable through double-quoted escapes: they have no place in
 * names, paths or globs, would break one-line log records, and YAML would read some of them
 * back as line breaks.  @s is valid UTF-8 (checked before parsing, and libyaml's escapes).
 */
static bool text_is_clean(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;

	for (size_t i = 0; i < len; i++) {
		if (u[i] < 0x20 || u[i] == 0x7f)
			return false;
		if (u[i] == 0xc2 && i + 1 < len && u[i + 1] >= 0x80 && u[i + 1] <= 0x9f)
			return false;
		if (u[i] == 0xe2 && i + 2 < len && u[i + 1] == 0x80 &&
		    (u[i + 2] == 0xa8 || u[i + 2] == 0xa9))
			return false;
		if (u[i] == 0xef && i + 2 < len && u[i + 1] == 0xbf &&
		    (u[i + 2] == 0xbe || u[i + 2] == 0xbf))
			return false;
	}
	return true;
}

/* A non-null scalar without control characters, or NULL after a diagnostic. */
const char *qj_yaml_want_scalar(struct ctx *c, struct node *n, const char *what)
{
	if (!qj_yaml_expect_kind(c, n, NODE_SCALAR, what))
		return NULL;
	if (!text_is_clean(n->value, n->len)) {
		diag(c, n, "must not contain control characters or line breaks");
		return NULL;
	}
	return n->value;
}

/* A plain (unquoted) scalar: numbers and booleans are not strings. */
static const char *want_plain(struct ctx *c, struct node *n, const char *what)
{
	char buf[QUOTE_MAX + 16];

	if (n->kind == NODE_SCALAR && !n->plain) {
		diag(c, n, "expected %s, got %s", what, qj_yaml_describe(n, buf));
		return NULL;
	}
	return qj_yaml_want_scalar(c, n, what);
}

bool qj_yaml_get_string(struct ctx *c, struct node *n, char **ret)
{
	const char *s = qj_yaml_want_scalar(c, n, "a string");
	char *copy;

	if (!s)
		return false;
	if (!*s) {
		diag(c, n, "must not be empty");
		return false;
	}
	copy = strdup(s);
	if (!copy) {
		c->error = -ENOMEM;
		return false;
	}
	free(*ret);
	*ret = copy;
	return true;
}

bool qj_yaml_get_path(struct ctx *c, struct node *n, char **ret)
{
	char q[QUOTE_MAX + 4];
	const char *s = qj_yaml_want_scalar(c, n, "an absolute path");

	if (!s)
		return false;
	if (s[0] != '/') {
		diag(c, n, "expected an absolute path, got '%s'", qj_yaml_printable(s, n->len, q));
		return false;
	}
	return qj_yaml_get_string(c, n, ret);
}

bool qj_yaml_get_bool(struct ctx *c, struct node *n, bool *ret)
{
	static const char *const yes[] = { "true", "True", "TRUE" };
	static const char *const no[] = { "false", "False", "FALSE" };
	char buf[QUOTE_MAX + 16];
	const char *s = want_plain(c, n, "true or false");

	if (!s)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcmp(s, yes[i]) == 0) {
			*ret = true;
			return true;
		}
		if (strcmp(s, no[i]) == 0) {
			*ret = false;
			return true;
		}
	}
	diag(c, n, "expected true or false, got %s", qj_yaml_describe(n, buf));
	return false;
}

bool qj_yaml_get_uint(struct ctx *c, struct node *n, uint64_t min, uint64_t max, uint64_t *ret)
{
	char buf[QUOTE_MAX + 16];
	const char *s = want_plain(c, n, "an integer");
	uint64_t v;
	int r;

	if (!s)
		return false;
	r = qj_units_parse_u64(s[0] == '-' && qj_units_is_digit(s[1]) ? s + 1 : s, &v);
	if (r == -EINVAL) {
		diag(c, n, "expected an integer, got %s", qj_yaml_describe(n, buf));
		return false;
	}
	if (r < 0 || s[0] == '-' || v < min || v > max) {
		diag(c, n, "%s is out of range (%" PRIu64 "..%" PRIu64 ")",
		     qj_yaml_describe(n, buf), min, max);
		return false;
	}
	*ret = v;
	return true;
}

bool qj_yaml_get_duration(struct ctx *c, struct node *n, uint64_t min, uint64_t max, uint64_t *ret)
{
	char buf[QUOTE_MAX + 16], a[32], b[32];
	const char *s = qj_yaml_want_scalar(c, n, "a duration");
	uint64_t v;
	int r;

	if (!s)
		return false;
	r = qj_parse_duration(s, &v);
	if (r == -EINVAL) {
		diag(c, n,
		     "expected a duration such as 250ms, 5s, 2m or 1h (units: us, ms, s, m, h), got %s",
		     qj_yaml_describe(n, buf));
		return false;
	}
	if (r < 0 || v < min || v > max) {
		diag(c, n, "duration %s is out of range (%s..%s)", qj_yaml_describe(n, buf),
		     qj_units_format_duration(min, a), qj_units_format_duration(max, b));
		return false;
	}
	*ret = v;
	return true;
}

bool qj_yaml_get_size(struct ctx *c, struct node *n, uint64_t min, uint64_t max, uint64_t *ret)
{
	char buf[QUOTE_MAX + 16], a[32], b[32];
	const char *s = qj_yaml_want_scalar(c, n, "a size");
	uint64_t v;
	int r;

	if (!s)
		return false;
	r = qj_parse_size(s, &v);
	if (r == -EINVAL) {
		diag(c, n, "expected a size in bytes with an optional K, M or G suffix, got %s",
		     qj_yaml_describe(n, buf));
		return false;
	}
	if (r < 0 || v < min || v > max) {
		diag(c, n, "size %s is out of range (%s..%s)", qj_yaml_describe(n, buf),
		     qj_units_format_size(min, a), qj_units_format_size(max, b));
		return false;
	}
	*ret = v;
	return true;
}
