/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the policy language's files share (private to controller/policy/):
 * yaml.c reads YAML into a node tree with exact marks and keeps the diagnostics,
 * schema.c walks the tree against the schema tables into a struct qj_policy (the
 * table walk in schema-walk.c; escalation:, apps: and access: in schema-ladder.c,
 * schema-apps.c and schema-access.c),
 * units.c reads and writes durations, sizes and percentages.
 */
#ifndef QJ_POLICY_INTERNAL_H
#define QJ_POLICY_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"
#include "util.h"

#define MAX_DEPTH 64 /* nesting of YAML collections; the schema needs 5 */
#define QUOTE_MAX 48 /* user text quoted in a message is cut after this many bytes */
#define USEC_PER_MINUTE (60 * USEC_PER_SEC)
#define USEC_PER_HOUR (60 * USEC_PER_MINUTE)
#define USEC_PER_DAY (24 * USEC_PER_HOUR)
#define TRUSTED_HOLD_MAX 64 /* default for trusted apps; jailed apps default to 0 */

enum node_kind {
	NODE_SCALAR,
	NODE_SEQ,
	NODE_MAP,
	NODE_ALIAS,
	NODE_BAD, /* already diagnosed (undefined or excess alias): accepted silently */
};

struct node {
	enum node_kind kind;
	unsigned line, col; /* 0-based, as libyaml marks them */
	bool plain; /* unquoted scalar: may be null, a number or a boolean */
	char *value; /* scalar text, NUL-terminated */
	size_t len;
	struct node **items; /* sequence items; mapping: key, value, key, value, ... */
	size_t n_items, a_items;
	struct node *target; /* alias */
};

struct anchor {
	char *name;
	struct node *node;
};

struct ctx {
	const char *text;
	size_t len;
	struct qj_diags *diags;
	size_t first_diag; /* diags->v[first_diag...] are ours */
	size_t n_dropped;
	unsigned drop_line, drop_col;
	bool diags_closing; /* the "more errors" line bypasses the cap */
	int error; /* -ENOMEM: stop everything */

	struct node **nodes; /* owns every node */
	size_t n_nodes, a_nodes;
	struct anchor *anchors;
	size_t n_anchors, a_anchors;
	unsigned n_aliases;

	char *path; /* key path of the node being walked */
	size_t path_len, a_path;

	struct qj_policy *p;
	bool ladder_ok; /* rung names may be resolved */
};

/* ---- units.c ---- */
bool qj_units_is_digit(char c);
int qj_units_parse_u64(const char *s, uint64_t *ret);
int qj_units_parse_percent(const char *s, double *ret);
const char *qj_units_format_duration(uint64_t usec, char buf[static 32]);
const char *qj_units_format_size(uint64_t bytes, char buf[static 32]);

/* ---- yaml.c: the node tree and the diagnostics ---- */
const char *qj_yaml_printable(const char *s, size_t len, char buf[static QUOTE_MAX + 4]);
void qj_yaml_diag_pos(struct ctx *c, unsigned line0, unsigned col0, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void qj_yaml_diags_finish(struct ctx *c);
size_t qj_yaml_path_push(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
size_t qj_yaml_path_push_key(struct ctx *c, const char *key, size_t len);
void qj_yaml_path_pop(struct ctx *c, size_t old);
void qj_yaml_ctx_done(struct ctx *c);
void qj_yaml_offset_to_pos(const char *text, size_t len, size_t offset, unsigned *line,
			   unsigned *col);
size_t qj_yaml_utf8_invalid_offset(const unsigned char *s, size_t len);
int qj_yaml_build_tree(struct ctx *c, struct node **ret_root);
struct node *qj_yaml_deref(struct node *n);
struct node *qj_yaml_map_get(struct node *map, const char *key);
bool qj_yaml_is_null(const struct node *n);
const char *qj_yaml_describe(const struct node *n, char buf[static QUOTE_MAX + 16]);
bool qj_yaml_expect_kind(struct ctx *c, struct node *n, enum node_kind kind, const char *what);
const char *qj_yaml_want_scalar(struct ctx *c, struct node *n, const char *what);
bool qj_yaml_get_string(struct ctx *c, struct node *n, char **ret);
bool qj_yaml_get_path(struct ctx *c, struct node *n, char **ret);
bool qj_yaml_get_bool(struct ctx *c, struct node *n, bool *ret);
bool qj_yaml_get_uint(struct ctx *c, struct node *n, uint64_t min, uint64_t max, uint64_t *ret);
bool qj_yaml_get_duration(struct ctx *c, struct node *n, uint64_t min, uint64_t max, uint64_t *ret);
bool qj_yaml_get_size(struct ctx *c, struct node *n, uint64_t min, uint64_t max, uint64_t *ret);
#define diag(c, node, ...) qj_yaml_diag_pos((c), (node)->line, (node)->col, __VA_ARGS__)

/* ---- schema-walk.c: a mapping against a table of fields ---- */
enum field_type {
	F_STRING, /* char * */
	F_PATH, /* char *, absolute */
	F_BOOL, /* bool */
	F_UNSIGNED, /* unsigned, min..max */
	F_DURATION, /* uint64_t microseconds, min..max */
	F_SIZE, /* uint64_t bytes, min..max */
	F_CUSTOM, /* walk() */
};

struct field;
typedef void (*walk_fn)(struct ctx *c, struct node *n, void *obj, const struct field *f);

struct field {
	const char *key;
	enum field_type type;
	size_t offset; /* into obj */
	uint64_t min, max;
	walk_fn walk;
	bool required;
};

#define FIELD_MAX 16

bool qj_schema_name_is_valid(const char *s, bool allow_upper);
uint64_t qj_schema_walk_map(struct ctx *c, struct node *n, const struct field *fields,
			    size_t n_fields, void *obj);

/* ---- the sections: schema.c (the document and the small ones), schema-*.c ---- */
void qj_schema_walk_escalation(struct ctx *c, struct node *n, void *obj, const struct field *f);
int qj_schema_get_rung(struct ctx *c, struct node *n);
void qj_schema_walk_apps(struct ctx *c, struct node *n, void *obj, const struct field *f);
void qj_schema_app_done(struct qj_app *a);
void qj_schema_walk_access(struct ctx *c, struct node *n, void *obj, const struct field *f);
void qj_schema_principals_clear(struct qj_principals *pr);
/* "*" or uids: and groups:, into the struct qj_principals at @f->offset of the policy */
void qj_schema_walk_principals(struct ctx *c, struct node *n, void *obj, const struct field *f);
void qj_schema_walk_document(struct ctx *c, struct node *root);

#endif
