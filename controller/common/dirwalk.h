/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Opening a directory root writes into (the kill log's, the metrics file's) on a path no
 * user can redirect: each component opened with O_NOFOLLOW relative to the one before,
 * and every directory passed through owned by root (or us) and not writable by group or
 * others unless sticky (/tmp).  Its owner, or anyone who may write it, could otherwise
 * swap the next component for a symlink, and root would write where it names.
 */
#ifndef QJ_DIRWALK_H
#define QJ_DIRWALK_H

enum {
	QJ_WALK_CREATE = 1 << 0, /* make missing components (0750) */
	QJ_WALK_PRIVATE = 1 << 1, /* the directory itself: trusted owner, no group/other write */
	QJ_WALK_READABLE = 1 << 2, /* an fd that can be fsync()ed, not an O_PATH one */
};

/* Opens the absolute @dir as above into *ret_fd; -EPERM, -ELOOP (a symlink) or -errno. */
int qj_open_dir_walked(const char *dir, unsigned flags, int *ret_fd);

#endif
