#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The whole system in the QEMU guest (issue 13), run by kernel/scripts/system as
# the guest's /system-test (busybox sh, as root, in the guest only: it suspends
# the machine it runs on).  qosjaild jails real programs, writes "qos" to the
# patched kernel's /sys/power/state, and each scenario prints one line:
#   QJ-SYSTEM: PASS|FAIL N: what was seen (uptime U s, took T s)
# then "QJ-SYSTEM: DONE F failure(s)".  Order: 1 2 3 4 7 6 5 (real S3 last), or
# those of $QJ_SYSTEM_SCENARIOS (1 sets the scene: keep it first).
# The policies are /etc/qosjail/{qos,wakeup-count,s3}.yaml; the daemon's log
# is /tmp/qosjaild.log (printed when a scenario fails).

export PATH=/bin:/sbin
JAIL=/sys/fs/cgroup/qosjail
STATS=/sys/kernel/debug/wakeup_sources
SUCCESS=/sys/power/suspend_stats/success
LOG=/var/log/qosjail/kill.log
failures=0

# ---- helpers ----

uptime_s() { cut -d' ' -f1 /proc/uptime; }

# The daemon's status reply (JSON), and one field of it: the first "KEY": value.
status() { S=$(qosjailctl status --json 2>/dev/null); }
field() { echo "$S" | grep -o "\"$1\": *[^,}]*" | head -1 | sed 's/^[^:]*: *//; s/"//g'; }
sfield() { status && field "$1"; }

# wait_for SECONDS WHAT CMD...: runs CMD every 0.2 s until it succeeds.  The limit
# only stops a run that went wrong; nothing passes or fails on how fast it is.
wait_for() {
	_end=$(($(cut -d. -f1 /proc/uptime) + $1))
	_what=$2
	shift 2
	while [ "$(cut -d. -f1 /proc/uptime)" -lt $_end ]; do
		"$@" && return 0
		sleep 0.2
	done
	why="timed out waiting for $_what"
	return 1
}

state_is() { [ "$(sfield state)" = "$1" ]; }
state_not() { _s=$(sfield state); [ -n "$_s" ] && [ "$_s" != "$1" ]; }
success() { cat $SUCCESS; }
success_above() { [ "$(success)" -gt "$1" ]; }
field_at_least() { status && [ "$(field "$1")" -ge "$2" ]; }
# A QOS_EVENTUALLY request is a wakeup source: column 6 of its row in
# wakeup_sources is active_since (ms, 0 when inactive).
kernel_row() { awk -v n="$1" '$1 == n { print $'"$2"' }' $STATS; }
kernel_holds() { [ "$(kernel_row "$1" 6)" -gt 0 ] 2>/dev/null; }
# A thread of qosjaild is blocked in write(2) (syscall 1) on /sys/power/state:
# the kernel's own record of the syscall, fd and all.
qos_write_blocked() {
	_d=$(pidof qosjaild) || return 1
	for _t in /proc/$_d/task/*; do
		set -- $(cat $_t/syscall 2>/dev/null)
		[ "${1:-}" = 1 ] || continue
		[ "$(readlink /proc/$_d/fd/$(($2)))" = /sys/power/state ] && return 0
	done
	return 1
}
# The daemon's "qos" write waits while request NAME is active.
kernel_waits_on() { kernel_holds "$1" && qos_write_blocked; }
proc_state() { sed 's/.*) \(.\).*/\1/' /proc/"$1"/stat 2>/dev/null; }
utime() { sed 's/.*) //' /proc/"$1"/stat | cut -d' ' -f12; }
utime_above() { [ "$(utime "$1")" -gt "$2" ]; }
file_has() { grep -q "$2" "$1" 2>/dev/null; }

# A hold through the daemon, kept until hold_off NAME (the command it runs ends).
holds() { status && echo "$S" | grep -q "\"name\": *\"$1\""; }
hold_on() {
	mkfifo /tmp/hold-$1
	qosjailctl hold --name "$1" --why "system test" -- sh -c "read x </tmp/hold-$1" &
	wait_for 60 "hold $1" holds "$1" && wait_for 60 "the daemon awake" state_is awake
}
# Ends the "read x <FIFO" of a helper started above; the limit only guards a
# helper that died before it read.
release() {
	timeout 30 sh -c "echo >$1"
	rm -f "$1"
}
hold_off() { release /tmp/hold-$1; }

# A trusted driver's constraint: a /dev/cpu_interactivity request named qj-driver,
# held while the file is open.
drv_on() {
	mkfifo /tmp/drv
	sh -c 'exec 3>/dev/cpu_interactivity && printf "qj-driver 1" >&3 && read x </tmp/drv' &
	wait_for 30 "the qj-driver request" kernel_holds qj-driver
}
drv_off() { release /tmp/drv; }

begin() {
	t0=$(uptime_s)
	why=""
}
# result PASS|FAIL N WORDS...: the scenario's line (on FAIL with $why and the state).
result() {
	_res=$1
	_n=$2
	shift 2
	_t=$(uptime_s)
	_took=$(awk -v a="$t0" -v b="$_t" 'BEGIN { printf "%.1f", b - a }')
	if [ "$_res" = PASS ]; then
		echo "QJ-SYSTEM: PASS $_n: $* (uptime $_t s, took $_took s)"
	else
		failures=$((failures + 1))
		echo "QJ-SYSTEM: FAIL $_n: $*: $why (uptime $_t s, took $_took s)"
		qosjailctl status
		echo "---- qosjaild log (tail) ----"
		tail -40 /tmp/qosjaild.log
		echo "---- kill log (tail) ----"
		tail -10 $LOG
	fi
}

app_pid() { head -1 $JAIL/$1/cgroup.procs 2>/dev/null; }
app_started() { [ -n "$(app_pid "$1")" ]; }

# ---- scenarios ----

# 1. A busy app and a polite one: polite gets SIGXCPU, busy is stopped, "qos"
# suspends (pm_test=core) and resumes, every stopped task runs again, the kill
# log has the records.
s1() {
	begin
	s0=$(success)
	c0=$(sfield cycle)
	hold_off setup
	wait_for 120 "a suspend" success_above "$s0" || { result FAIL 1 "busy+polite cycle"; return; }
	hold_on setup || { result FAIL 1 "busy+polite cycle"; return; }
	# The first cycle with the apps that suspended, from its summary record (the
	# daemon cycled with an empty jail before the script's first hold).
	c=$(grep '"action":"summary"' $LOG | grep '"reason":"suspended"' |
		grep -o '"cycle":[0-9]*' | cut -d: -f2 | awk -v c0="$c0" '$1 > c0' | head -1)
	sum=$(grep "\"cycle\":$c," $LOG | grep '"action":"summary"')
	stopped=$(echo "$sum" | grep -o '"stopped":[0-9]*' | cut -d: -f2)
	continued=$(echo "$sum" | grep -o '"continued":[0-9]*' | cut -d: -f2)
	if [ -z "$c" ]; then
		why="no summary record of a suspended cycle"
	elif ! grep "\"cycle\":$c," $LOG | grep '"app":"busy"' | grep -q '"action":"SIGSTOP"'; then
		why="no sigstop record for busy in cycle $c"
	elif ! grep "\"cycle\":$c," $LOG | grep '"app":"polite"' | grep -q '"action":"SIGXCPU"'; then
		why="no sigxcpu record for polite in cycle $c"
	elif [ "${stopped:-0}" -lt 1 ] || [ "$continued" != "$stopped" ]; then
		why="cycle $c stopped $stopped task(s) and continued $continued"
	elif [ "$(proc_state "$BUSY")" = T ] || [ "$(sfield stopped)" != 0 ]; then
		why="busy is still stopped after the cycle"
	else
		u=$(utime "$BUSY")
		if wait_for 60 "busy to run again" utime_above "$BUSY" "$u"; then
			acts=$(grep "\"cycle\":$c," $LOG | grep '"pid":' |
				sed 's/.*"app":"\([^"]*\)".*"pid":\([0-9]*\).*"action":"\([^"]*\)".*/\1[\2] \3/' |
				tr '\n' ',' | sed 's/,$//; s/,/, /g')
			result PASS 1 "cycle $c ($acts); qos suspended" \
				"(suspend_stats/success $s0 -> $(success)); $continued stopped task(s) continued, busy runs"
			return
		fi
	fi
	result FAIL 1 "busy+polite cycle"
}

# 2. A held /dev/cpu_interactivity request makes the "qos" write wait; status
# shows the wait; the cycle completes when it is released.
s2() {
	begin
	drv_on || { result FAIL 2 "driver constraint"; return; }
	s0=$(success)
	n0=$(sfield suspends)
	hold_off setup
	if wait_for 120 "the daemon to write qos" state_is suspending &&
		wait_for 60 "the kernel to count the wait" kernel_waits_on qj-driver; then
		shown=$(qosjailctl status | grep '^State:' | tr -s ' ')
		if [ "$(success)" != "$s0" ]; then
			why="suspended while the constraint was held"
		elif ! echo "$shown" | grep -q 'suspending'; then
			why="status shows \"$shown\""
		else
			since=$(kernel_row qj-driver 6)
			drv_off
			if wait_for 120 "the suspend" success_above "$s0" &&
				wait_for 60 "the cycle's result" field_at_least suspends $((n0 + 1)); then
				hold_on setup
				result PASS 2 "qos waited on qj-driver (status: \"$shown\"," \
					"write(2) on /sys/power/state blocked, qj-driver active ${since} ms); released: suspended"
				return
			fi
		fi
	fi
	drv_off
	hold_on setup
	result FAIL 2 "driver constraint"
}

# 3. A hold through the daemon while "qos" waits interrupts the write; the jail
# is restored at once.
s3() {
	begin
	drv_on || { result FAIL 3 "hold interrupts qos"; return; }
	s0=$(success)
	a0=$(sfield aborts)
	hold_off setup
	if wait_for 120 "the daemon to write qos" state_is suspending &&
		wait_for 60 "the kernel to count the wait" kernel_waits_on qj-driver; then
		before=$(proc_state "$BUSY")
		c=$(sfield cycle)
		hold_on setup
		# The cycle ends counted as an abort; only then is "last" this cycle's.
		wait_for 60 "cycle $c to end" field_at_least aborts $((a0 + 1))
		ended=$?
		after=$(proc_state "$BUSY")
		stopped=$(sfield stopped)
		res=$(field result)
		err=$(field error)
		aborts=$(field aborts)
		state=$(field state)
		if [ "$before" != T ]; then
			why="busy was not stopped while qos waited (state $before)"
		elif [ $ended != 0 ]; then
			why="$why: state $state (cycle $(field cycle)), last result $res ($err)"
			why="$why, aborts $a0 -> $aborts, busy $after, $stopped stopped"
		elif [ "$after" = T ] || [ "$stopped" != 0 ]; then
			why="busy still stopped after the hold ($after, $stopped stopped)"
		elif [ "$res" != interrupted ]; then
			why="cycle $c: last result $res ($err), aborts $a0 -> $aborts"
		elif [ "$(success)" != "$s0" ]; then
			why="it suspended anyway"
		else
			drv_off
			result PASS 3 "the hold interrupted qos (last: $res, $err); busy $before -> $after at once"
			return
		fi
	fi
	drv_off
	result FAIL 3 "hold interrupts qos"
}

# 4. An evdev client with unread events (uinput, opted in) holds the cycle
# until it reads.
s4() {
	begin
	qj-system-tool evdev-hold >/tmp/evdev.out &
	ev=$!
	if ! wait_for 30 "the uinput device" file_has /tmp/evdev.out READY; then
		kill $ev
		result FAIL 4 "evdev hold"
		return
	fi
	name=$(sed -n 's/^READY //p' /tmp/evdev.out)
	s0=$(success)
	hold_off setup
	if wait_for 120 "the daemon to write qos" state_is suspending &&
		wait_for 60 "the kernel to count the wait" kernel_waits_on "$name"; then
		if [ "$(success)" != "$s0" ]; then
			why="suspended with unread events"
		else
			kill -USR1 $ev
			if wait_for 30 "the client to read" file_has /tmp/evdev.out READ &&
				wait_for 120 "the suspend" success_above "$s0"; then
				hold_on setup
				kill $ev
				wait $ev
				result PASS 4 "qos waited on $name while its events were unread; read: suspended"
				return
			fi
		fi
	fi
	hold_on setup
	kill $ev
	wait $ev
	result FAIL 4 "evdev hold"
}

# 7. A cpu latency request too short for suspend: the write fails with ERANGE,
# the daemon backs off (retry.initial doubled per failed cycle up to retry.max)
# and status says so.  Judged on two status snapshots with different failure
# counts, whatever cycles the script's polling missed in between.
backoff_for() { # the policy's backoff after K failed cycles in a row: 1 s, 2 s, 4 s max
	awk -v k="$1" 'BEGIN { b = 1000000; while (--k > 0 && b < 4000000) b *= 2; print b }'
}
s7() {
	begin
	mkfifo /tmp/lat
	# "a": 0xa = 10 us (text is parsed as hex when it is not a binary s32).
	sh -c 'exec 4>/dev/cpu_dma_latency && printf a >&4 && read x </tmp/lat' &
	sleep 0.5
	f0=$(sfield failures)
	s0=$(success)
	hold_off setup
	if wait_for 120 "a refusal" field_at_least failures $((f0 + 1)); then
		k1=$(($(field failures) - f0))
		err1=$(field error)
		b1=$(field retry_usec)
		if wait_for 120 "another refusal" field_at_least failures $((f0 + k1 + 1)); then
			k2=$(($(field failures) - f0))
			err2=$(field error)
			b2=$(field retry_usec)
			shown=$(qosjailctl status | grep -E '^(Last|Backoff):' | tr -s ' \n' ' ')
			if [ "$err1" != ERANGE ] || [ "$err2" != ERANGE ]; then
				why="errors $err1, $err2"
			elif [ "$b1" != "$(backoff_for $k1)" ] || [ "$b2" != "$(backoff_for $k2)" ]; then
				why="backoff $b1 us after $k1 failure(s), $b2 us after $k2; policy retry 1s..4s"
			elif [ "$(success)" != "$s0" ]; then
				why="it suspended with the latency request"
			else
				release /tmp/lat
				if wait_for 120 "the suspend" success_above "$s0"; then
					hold_on setup
					b3=$(sfield retry_usec)
					result PASS 7 "ERANGE, backoff $b1 us after $k1 refusal(s), $b2 us" \
						"after $k2 (status: ${shown% }); latency request gone:" \
						"suspended, backoff $b3"
					return
				fi
			fi
		fi
	fi
	[ -p /tmp/lat ] && release /tmp/lat
	hold_on setup
	result FAIL 7 "latency veto"
}

# The reason of the summary record of the first cycle after cycle $1 (the kill log).
summaries_after() {
	grep '"action":"summary"' $LOG | awk -v c0="$1" '{
		match($0, /"cycle":[0-9]+/); c = substr($0, RSTART + 8, RLENGTH - 8) + 0
		match($0, /"reason":"[^"]*"/); r = substr($0, RSTART + 10, RLENGTH - 11)
		if (c > c0) print c, r }'
}

# 6. The stock-kernel protocol on the same kernel ("qos" unused): backend
# wakeup-count; a wakeup event during the quiesce aborts the cycle, which retries.
s6() {
	begin
	qosjailctl reload /etc/qosjail/wakeup-count.yaml
	if [ "$(sfield backend)" != wakeup-count ]; then
		why="backend $(field backend) after the reload"
		result FAIL 6 "wakeup-count fallback"
		return
	fi
	rm -f /tmp/gate-open
	qosjailctl run --app gate -- qj-system-tool gate /tmp/gate-open >/dev/null &
	wait_for 30 "the gate app" app_started gate
	c0=$(sfield cycle)
	m0=$(field wakeup_count_mismatches)
	s0=$(success)
	hold_off setup
	# The gate app holds the quiesce up (it spins after SIGXCPU until the gate opens).
	if wait_for 120 "the quiesce to wait for the gate app" eval '[ "$(sfield holding_app)" = gate ]'; then
		echo qj-wakeup >/sys/power/wake_lock
		echo qj-wakeup >/sys/power/wake_unlock
		touch /tmp/gate-open
		if wait_for 120 "the retry to suspend" success_above "$s0"; then
			hold_on setup
			m1=$(sfield wakeup_count_mismatches)
			# The cycle the event hit, and the next one.
			set -- $(summaries_after "$c0" | head -2)
			if [ "$m1" -le "$m0" ]; then
				why="wakeup_count_mismatches $m0 -> $m1"
			elif [ "$2" != failed ] || [ "$4" != suspended ]; then
				why="cycles after $c0: $1 $2, ${3:-none} ${4:-}"
			else
				qosjailctl reload /etc/qosjail/qos.yaml
				result PASS 6 "backend wakeup-count: a wakeup event during the quiesce of" \
					"cycle $1 failed it (wakeup_count_mismatches $m0 -> $m1), no suspend;" \
					"the retry, cycle $3, suspended"
				return
			fi
		fi
	fi
	touch /tmp/gate-open
	hold_on setup
	qosjailctl reload /etc/qosjail/qos.yaml
	result FAIL 6 "wakeup-count fallback"
}

# 5. Real S3 (no pm_test): the cycle suspends the guest and the RTC wakealarm
# wakes it; suspend_stats/success counts it and the guest's clocks show the
# time slept.  idle_delay is 30 s in s3.yaml, so no second cycle suspends
# without an alarm before the hold below is back.
s5() {
	begin
	qosjailctl reload /etc/qosjail/s3.yaml
	drv_on || { result FAIL 5 "real S3"; return; }
	echo none >/sys/power/pm_test
	s0=$(success)
	w0=$(dmesg | grep -c 'Waking up from system sleep state S3')
	hold_off setup
	qosjailctl suspend >/dev/null
	if wait_for 120 "the daemon to write qos" state_is suspending &&
		wait_for 60 "the kernel to count the wait" kernel_waits_on qj-driver; then
		set -- $(qj-system-tool clocks)
		echo 0 >/sys/class/rtc/rtc0/wakealarm
		echo +10 >/sys/class/rtc/rtc0/wakealarm
		drv_off
		if wait_for 120 "the resume" success_above "$s0"; then
			set -- "$@" $(qj-system-tool clocks)
			hold_on setup
			echo core >/sys/power/pm_test
			slept=$(awk -v b0="$1" -v m0="$2" -v b1="$3" -v m1="$4" \
				'BEGIN { printf "%.1f", ((b1 - m1) - (b0 - m0)) / 1e9 }')
			w1=$(dmesg | grep -c 'Waking up from system sleep state S3')
			if [ "$w1" -le "$w0" ]; then
				why="no \"Waking up from system sleep state S3\" in the kernel log"
			elif ! awk -v s="$slept" 'BEGIN { exit !(s >= 5) }'; then
				why="slept only $slept s with a 10 s alarm"
			else
				result PASS 5 "real S3: suspend_stats/success $s0 -> $(success)," \
					"slept $slept s (boottime - monotonic), woken by the RTC alarm"
				qosjailctl reload /etc/qosjail/qos.yaml
				return
			fi
		fi
	fi
	echo core >/sys/power/pm_test
	drv_off 2>/dev/null
	hold_on setup
	qosjailctl reload /etc/qosjail/qos.yaml
	result FAIL 5 "real S3"
}

# ---- main ----

mkdir -p /var/log/qosjail /run/qosjail
echo core >/sys/power/pm_test
qosjaild -p /etc/qosjail/qos.yaml -d 2>/tmp/qosjaild.log &
daemon=$!
if ! wait_for 120 "qosjaild" status; then
	echo "QJ-SYSTEM: FAIL 0: qosjaild did not start"
	cat /tmp/qosjaild.log
	echo "QJ-SYSTEM: DONE 1 failure(s)"
	exit 1
fi
begin
hold_on setup
qosjailctl run --app busy -- qj-busy >/dev/null &
qosjailctl run --app polite -- qj-polite >/dev/null &
wait_for 60 "busy" app_started busy && wait_for 60 "polite" app_started polite
BUSY=$(app_pid busy)
echo "QJ-SYSTEM: READY daemon $daemon, busy $BUSY, polite $(app_pid polite)" \
	"(uptime $(uptime_s) s)"

for n in ${QJ_SYSTEM_SCENARIOS:-1 2 3 4 7 6 5}; do
	s$n
done

hold_off setup
kill -TERM $daemon
wait $daemon
rc=$?
if [ $rc != 0 ] || grep -q -E 'Sanitizer|runtime error:' /tmp/qosjaild.log; then
	failures=$((failures + 1))
	echo "QJ-SYSTEM: FAIL daemon: exit status $rc"
	grep -A20 -E 'Sanitizer|runtime error:' /tmp/qosjaild.log
else
	echo "QJ-SYSTEM: PASS daemon: exited 0 on SIGTERM, no sanitizer report"
fi
echo "QJ-SYSTEM: DONE $failures failure(s)"
