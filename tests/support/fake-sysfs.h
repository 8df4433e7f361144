/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A fake /sys/power for integration tests: an in-process FUSE filesystem
 * (libfuse3 low-level API) served by a thread of the test process and mounted
 * on a directory of the test's choice (root only; needs /dev/fuse).
 *
 *   power/state         read: "freeze mem qos\n".  A write of "qos", "mem" or
 *                       "freeze" is answered the way the test says (see
 *                       enum fake_sysfs_mode), anything else fails with EINVAL.
 *   power/wakeup_count  read: the counter the test set.  A write of another
 *                       value fails with EINVAL, as the kernel's does.
 *
 * Unlike a FIFO, the write(2) itself can fail with any errno, and a blocked
 * write sees a signal the way the patched kernel's interruptible wait does:
 * the kernel forwards it as a FUSE interrupt and the fake answers EINTR.
 * Every write is recorded with its result, in the order they were answered.
 */
#ifndef QJ_FAKE_SYSFS_H
#define QJ_FAKE_SYSFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fake_sysfs;

/* How a write to power/state is answered. */
enum fake_sysfs_mode {
	FAKE_SYSFS_SUSPEND, /* at once, successfully: a suspend that resumed */
	FAKE_SYSFS_ERANGE, /* at once, ERANGE: an incompatible latency constraint is active */
	FAKE_SYSFS_BLOCK, /* when fake_sysfs_release_blocked() (OK) or the writer is signalled (EINTR) */
	_FAKE_SYSFS_MODE_MAX,
};

/* One write, recorded when it was answered. */
struct fake_sysfs_write {
	char file[16]; /* "state" or "wakeup_count" */
	char text[32]; /* what was written, trailing newline removed */
	int result; /* 0 or the negative errno the writer got */
	uint64_t start_usec; /* CLOCK_MONOTONIC: the request reached the fake */
	uint64_t end_usec; /* CLOCK_MONOTONIC: just before it was answered */
};

/*
 * Mounts the fake on @dir (an existing empty directory) and starts its thread.
 * Default mode FAKE_SYSFS_SUSPEND, wakeup_count 0.  Negative errno on failure.
 */
int fake_sysfs_start(const char *dir, struct fake_sysfs **ret);
/*
 * Answers a blocked write with EIO, stops the thread, unmounts (lazily if
 * something still has a file open) and frees.  NULL is fine.  Returns 0, or
 * -EBUSY if the directory still appears in /proc/self/mounts afterwards.
 */
int fake_sysfs_stop(struct fake_sysfs *f);

/* The mode for state writes once the queue is empty. */
void fake_sysfs_set_state_mode(struct fake_sysfs *f, enum fake_sysfs_mode mode);
/* Queues a one-shot answer for the next state write, in order.  -ENOSPC when full. */
int fake_sysfs_queue_state(struct fake_sysfs *f, enum fake_sysfs_mode mode);
/* Lets the blocked state write return successfully.  -ENOENT when none is blocked. */
int fake_sysfs_release_blocked(struct fake_sysfs *f);
/* Waits until a state write is blocked.  0, or -ETIMEDOUT. */
int fake_sysfs_wait_blocked(struct fake_sysfs *f, int timeout_ms);

/* Sets the wakeup counter. */
void fake_sysfs_set_wakeup_count(struct fake_sysfs *f, unsigned count);
/*
 * A wakeup event right after the @n-th next read of wakeup_count: the counter
 * goes up by one once that read was answered (the race the kernel's write-back
 * check exists for).  0 turns it off.
 */
void fake_sysfs_wakeup_after_reads(struct fake_sysfs *f, unsigned n);

/* Number of writes answered so far. */
size_t fake_sysfs_n_writes(struct fake_sysfs *f);
/* The @i-th answered write.  -ENOENT when there is none (yet). */
int fake_sysfs_write_at(struct fake_sysfs *f, size_t i, struct fake_sysfs_write *ret);
/*
 * The writes as text, comma separated, e.g. "qos:EBUSY,qos:EBUSY,qos:OK" (state)
 * or "wakeup_count=42:EINVAL" (wakeup_count).  Returns the number of writes.
 */
int fake_sysfs_writes(struct fake_sysfs *f, char *buf, size_t size);
/* Waits until at least @n writes were answered.  Their number, or -ETIMEDOUT. */
int fake_sysfs_wait_writes(struct fake_sysfs *f, size_t n, int timeout_ms);

/* True when @dir is a mount point in /proc/self/mounts. */
bool fake_sysfs_mounted(const char *dir);

#endif
