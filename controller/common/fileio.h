/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Whole-file reads and writes of small kernel files (cgroup, /proc): -errno on failure. */
#ifndef QJ_FILEIO_H
#define QJ_FILEIO_H

#include <stdint.h>

/* Reads all of @path (looping: cgroup.procs gives 4096 bytes a read) into *ret, NUL-ended. */
int qj_read_file(const char *path, char **ret);
/*
 * qj_read_file() for a file the kernel writes as one record at each read (a per-process
 * /proc file: stat, status, cgroup, timerslack_ns): a read short of the buffer holds it
 * all, so it takes one read(2), not two (10,000 tasks are read in one quiesce step).
 * Not for cgroup.procs, whose reads stop at 4096 bytes before its end.
 */
int qj_read_record_file(const char *path, char **ret);
/* Writes @s to the existing file @path in one write(); -EIO when it took less. */
int qj_write_file(const char *path, const char *s);
/*
 * A knob holding one integer (cpu.idle, cpu.weight, cpu.shares): -EBADMSG when @path
 * holds anything but the number and an optional newline (fail closed: never 0 for junk).
 */
int qj_read_int64_file(const char *path, int64_t *ret);
int qj_write_int64_file(const char *path, int64_t v);

#endif
