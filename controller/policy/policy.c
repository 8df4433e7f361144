// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The policy language, version 1: policy objects (defaults, free) and the two passes of
 * qj_policy_parse(): yaml.c builds the node tree, schema.c walks it.  Pure: no syscalls
 * except reading the file in qj_policy_load().
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy-internal.h"
#include "policy.h"
#include "util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct qj_policy *, qj_policy_free);

/* ---- policy objects --------------------------------------------------------------------- */

struct qj_policy *qj_policy_free(struct qj_policy *p)
{
	if (!p)
		return NULL;
	free(p->source);
	free(p->sysfs_root);
	free(p->wakeup_state);
	free(p->cgroup_path);
	free(p->cpu_cgroup_path);
	for (size_t i = 0; i < p->n_rungs; i++)
		free(p->rungs[i].name);
	for (size_t i = 0; i < p->n_apps; i++)
		qj_schema_app_done(&p->apps[i]);
	free(p->apps);
	qj_schema_principals_clear(&p->access_place);
	qj_schema_principals_clear(&p->access_reload);
	qj_schema_principals_clear(&p->access_suspend);
	qj_schema_principals_clear(&p->access_logs);
	qj_schema_principals_clear(&p->access_hold);
	qj_schema_principals_clear(&p->access_delay);
	qj_schema_principals_clear(&p->logind_inhibitors);
	for (size_t i = 0; i < p->n_place_as; i++)
		free(p->place_as[i].uids);
	free(p->place_as);
	free(p->log_path);
	free(p);
	return NULL;
}

static int principals_set(struct qj_principals *pr, bool anyone, bool adm)
{
	qj_schema_principals_clear(pr);
	pr->anyone = anyone;
	if (anyone)
		return 0;
	pr->uids = calloc(1, sizeof(*pr->uids)); /* root */
	if (!pr->uids)
		return -ENOMEM;
	pr->n_uids = 1;
	if (adm) {
		pr->groups = calloc(1, sizeof(*pr->groups));
		if (!pr->groups)
			return -ENOMEM;
		pr->groups[0] = strdup("adm");
		if (!pr->groups[0])
			return -ENOMEM;
		pr->n_groups = 1;
	}
	return 0;
}

int qj_policy_new_default(struct qj_policy **ret)
{
	static const enum qj_action ladder[] = { QJ_ACTION_SIGXCPU, QJ_ACTION_SIGSTOP,
						 QJ_ACTION_SIGTERM, QJ_ACTION_SIGKILL };
	_cleanup_(qj_policy_freep) struct qj_policy *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->backend = QJ_BACKEND_AUTO;
	p->idle_delay_usec = 5 * USEC_PER_SEC;
	p->retry_initial_usec = 1 * USEC_PER_SEC;
	p->retry_max_usec = 1 * USEC_PER_MINUTE;
	p->dry_run_length_usec = 2 * USEC_PER_SEC;
	p->max_delay_usec = 5 * USEC_PER_SEC; /* logind's InhibitDelayMaxSec default */
	p->dark_wake_max_usec = 5 * USEC_PER_SEC; /* a wake's handler, not a user */
	p->logind_bridge = true;
	p->logind_absent_max_usec = 60 * USEC_PER_SEC;
	p->cpu_idle = true;
	p->timer_slack_nsec = 50 * USEC_PER_MSEC * NSEC_PER_USEC;
	p->busy_threshold = 0.05;
	p->sample_window_usec = 1 * USEC_PER_SEC;
	for (size_t i = 0; i < ARRAY_SIZE(ladder); i++) {
		p->rungs[i].action = ladder[i];
		p->rungs[i].grace_usec = qj_action_info(ladder[i])->default_grace_usec;
		p->rungs[i].name = strdup(qj_action_info(ladder[i])->default_rung_name);
		if (!p->rungs[i].name)
			return -ENOMEM;
		p->n_rungs++;
	}
	p->max_strikes = 3;
	p->strike_rung = 1; /* stop */
	p->max_clients = 1024;
	p->max_clients_per_uid = 64;
	p->max_holds_per_uid = 256;
	p->max_holds_per_conn = 64;
	p->log_max_bytes = 10ULL << 20;
	p->log_keep = 5;
	p->sysfs_root = strdup("/sys");
	p->wakeup_state = strdup("mem");
	p->cgroup_path = strdup("/sys/fs/cgroup/unified/qosjail");
	p->cpu_cgroup_path = strdup("/sys/fs/cgroup/cpu/qosjail");
	p->log_path = strdup("/var/log/qosjail/kill.log");
	if (!p->sysfs_root || !p->wakeup_state || !p->cgroup_path || !p->cpu_cgroup_path ||
	    !p->log_path)
		return -ENOMEM;
	if (principals_set(&p->access_place, false, false) < 0 ||
	    principals_set(&p->access_reload, false, false) < 0 ||
	    principals_set(&p->access_suspend, false, false) < 0 ||
	    principals_set(&p->access_logs, false, true) < 0 ||
	    principals_set(&p->access_hold, true, false) < 0 ||
	    principals_set(&p->access_delay, false, false) < 0 ||
	    principals_set(&p->logind_inhibitors, true, false) < 0)
		return -ENOMEM;
	*ret = TAKE_PTR(p);
	return 0;
}

int qj_policy_parse(const char *filename, const char *text, size_t len, struct qj_diags *diags,
		    struct qj_policy **ret)
{
	_cleanup_(qj_policy_freep) struct qj_policy *p = NULL;
	struct ctx c = { .text = text, .len = len, .diags = diags, .ladder_ok = true };
	struct node *root = NULL;
	size_t bad;
	int r;

	assert(diags);
	assert(text || len == 0);
	if (!diags->file) {
		diags->file = strdup(filename ? filename : "<input>");
		if (!diags->file)
			return -ENOMEM;
	}
	c.first_diag = diags->n;

	r = qj_policy_new_default(&p);
	if (r < 0)
		return r;
	c.p = p;
	if (filename) {
		p->source = strdup(filename);
		if (!p->source)
			return -ENOMEM;
	}

	if (len > QJ_POLICY_MAX_BYTES) {
		qj_yaml_diag_pos(&c, 0, 0,
				 "the file is larger than 1 MiB (%d bytes), the limit for a policy",
				 QJ_POLICY_MAX_BYTES);
		r = 0;
	} else if (len &&
		   (bad = qj_yaml_utf8_invalid_offset((const unsigned char *)text, len)) < len) {
		unsigned line, col;

		qj_yaml_offset_to_pos(text, len, bad, &line, &col);
		qj_yaml_diag_pos(&c, line, col,
				 "not valid UTF-8 (byte 0x%02X); a policy file must be UTF-8 text",
				 (unsigned char)text[bad]);
		r = 0;
	} else {
		r = qj_yaml_build_tree(&c, &root);
		if (r > 0)
			qj_schema_walk_document(&c, root);
	}
	qj_yaml_diags_finish(&c);
	qj_yaml_ctx_done(&c);
	if (c.error)
		return c.error;
	if (diags->n > c.first_diag)
		return -EINVAL;
	*ret = TAKE_PTR(p);
	return 0;
}

int qj_policy_load(const char *path, struct qj_diags *diags, struct qj_policy **ret)
{
	_cleanup_close_ int fd = -EBADF;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	struct stat st;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return negative_errno();
	if (fstat(fd, &st) < 0)
		return negative_errno();
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	/* Read one byte more than allowed: enough to tell an oversize file, never all of it. */
	buf = malloc(QJ_POLICY_MAX_BYTES + 1);
	if (!buf)
		return -ENOMEM;
	while (len < QJ_POLICY_MAX_BYTES + 1) {
		ssize_t n = read(fd, buf + len, QJ_POLICY_MAX_BYTES + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return negative_errno();
		if (n == 0)
			break;
		len += (size_t)n;
	}
	return qj_policy_parse(path, buf, len, diags, ret);
}
