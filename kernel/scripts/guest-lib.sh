# SPDX-License-Identifier: LGPL-2.1-or-later
# Shared by kernel/scripts/e2e and kernel/scripts/system (sourced, bash): the QEMU
# command line of the guest, the initramfs helpers and the console scan for kernel
# WARNING, BUG and lockdep reports.

QJ_CACHE=${QJ_KERNEL_CACHE:-/var/cache/qosjail-kernel}
QJ_BZIMAGE_DEFAULT=$QJ_CACHE/out/x86_64/arch/x86/boot/bzImage

# Holds the lock of a guest test's output directory $1 (its initramfs and console log)
# until the script exits: another checkout's suite on this machine waits here rather
# than repacking the initramfs or truncating the log under a running guest.
qj_guest_lock() {
	mkdir -p "$1"
	exec 8>"$1/.lock"
	flock 8
}

# Kernel reports that fail a guest test wherever they appear on the console.
QJ_SPLAT='WARNING:|BUG:|BUG [a-z]|Oops|Kernel panic|Call Trace:|DEBUG_LOCKS_WARN_ON|'
QJ_SPLAT+='possible (circular|recursive) locking|inconsistent lock state|'
QJ_SPLAT+='INFO: (possible|inconsistent|trying to register|task .* blocked)|'
QJ_SPLAT+='suspicious RCU usage|lockdep is turned off|scheduling while atomic|'
QJ_SPLAT+='sleeping function called from invalid context|bad unlock balance'

# Prints the splat lines of the files (or stdin); true when there is one.  A freeze
# that a wakeup aborted (check (e) makes one on purpose) lists the tasks not frozen
# yet with their stacks: those "Call Trace:" lines, up to "Restarting", are not a
# report; anything else in that stretch still is.
qj_splats() {
	LC_ALL=C awk '/Freezing of tasks aborted after/ { f = 1 }
		/Restarting (kernel threads|tasks)/ { f = 0 }
		!(f && /Call Trace:/)' "$@" | grep -a -E "$QJ_SPLAT"
}

# The scan itself must catch a real splat, pass the lockdep boot banner and an
# aborted freeze's task list, and still catch a trace outside that list.
qj_splats_selftest() {
	local abort='[ 5.3] Freezing of tasks aborted after 0.000 seconds (1 tasks refusing to freeze, wq_busy=0):
[ 5.3] task:kswapd0 state:R stack:0 pid:24 ppid:2 flags:0x00004000
[ 5.3] Call Trace:
[ 5.3] Restarting kernel threads ... done.'

	qj_splats >/dev/null <<<'[ 1.0] WARNING: CPU: 1 PID: 1 at kernel/power/qos.c:10 f+0x1/0x2' &&
		! qj_splats >/dev/null \
			<<<'[ 0.0] Lock dependency validator: Copyright (c) 2006 Red Hat, Inc., Ingo Molnar' &&
		! qj_splats >/dev/null <<<"$abort" &&
		qj_splats >/dev/null <<<"$abort
[ 6.0] Call Trace:"
}

# qj_guest_run LOG LIMIT BZIMAGE INITRD APPEND [QEMU ARGS...]: boots the guest (TCG,
# 2 CPUs, serial console on stdio, no reboot) until it powers off or LIMIT seconds
# pass; the console goes to LOG.  Returns QEMU's status (124: timed out).
qj_guest_run() {
	local log=$1 limit=$2 bzimage=$3 initrd=$4 append=$5
	shift 5
	timeout "$limit" qemu-system-x86_64 -accel tcg -m "${QJ_GUEST_MEM:-256}" -smp 2 \
		-nographic -no-reboot -kernel "$bzimage" -initrd "$initrd" \
		-append "console=ttyS0 panic=-1 no_console_suspend $append" "$@" \
		</dev/null >"$log" 2>&1
}

# qj_initramfs_base ROOT: an empty root with busybox (static) and its applets.
qj_initramfs_base() {
	local root=$1 t
	rm -rf "$root"
	mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,run,etc}
	cp /bin/busybox "$root/bin/busybox"
	for t in $(/bin/busybox --list); do
		[ "$t" = busybox ] || ln -sf busybox "$root/bin/$t"
	done
}

# qj_initramfs_add ROOT FILE DEST: copies an executable to ROOT/DEST and the shared
# libraries ldd finds for it (ld-linux included) to their own paths under ROOT.
qj_initramfs_add() {
	local root=$1 file=$2 dest=$3 lib
	mkdir -p "$root/$(dirname "$dest")"
	cp -L "$file" "$root/$dest"
	for lib in $(ldd "$file" 2>/dev/null | grep -o -E '/[^ ]+' || true); do
		[ -e "$root$lib" ] && continue
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
}

# qj_initramfs_pack ROOT OUT: a gzip'd newc cpio of ROOT.
qj_initramfs_pack() {
	(cd "$1" && find . | cpio -o -H newc --quiet -R 0:0 | gzip -1) >"$2"
}
