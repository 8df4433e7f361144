/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The jail inside systemd's delegated cgroup of qosjaild.service (issue 28). */
#ifndef QJ_DELEGATE_H
#define QJ_DELEGATE_H

/* The policy's default jail.cgroup: the jail's place is decided at start then. */
#define QJ_DEFAULT_JAIL "/sys/fs/cgroup/unified/qosjail"

/*
 * 1 and the unit's cgroup2 directory (allocated) when ours is delegated to us
 * (trusted.delegate=1, or we are in its "supervisor" leaf); 0 when not; negative errno.
 */
int qj_delegate_unit(char **ret_unit);
/*
 * When delegated: moves this process into the unit's "supervisor" leaf and enables
 * the cpu controller for the unit's children.  1 done, 0 not delegated, negative errno.
 */
int qj_delegate_enter(void);
/*
 * Where the jail goes when the policy names the default path: UNIT/jail when
 * delegated, MOUNT/qosjail on a pure cgroup2 system.  1 and *ret (allocated), 0 keep
 * the policy's path, negative errno.
 */
int qj_delegate_jail_path(const char *policy_path, char **ret);

#endif
