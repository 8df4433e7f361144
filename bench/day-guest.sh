#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Guest side of bench/day (issue 29): one scripted day under one power manager, run as
# root by the guest's /init (busybox; in the QEMU guest only: it suspends the machine
# it runs on).  The kernel command line says which manager and what day:
#   qjday.manager=load|android|android-trusted|qosjail|qosjail-dark  qjday.len=SECONDS
#   qjday.music=START:END,START:END (day seconds)  qjday.modem=FIRST:PERIOD
# Every measured event is a "QJ-DAY: ..." console line (day-tool prints them); the
# host sends the messages (key presses through QMP) and reads the rest.

export PATH=/bin:/sbin
arg() { tr ' ' '\n' </proc/cmdline | sed -n "s/^qjday\.$1=//p"; }
MANAGER=$(arg manager)
LEN=$(arg len)
MUSIC=$(arg music)
MODEM=$(arg modem)
UNTRUSTED=1000
JAIL=/sys/fs/cgroup/qosjail
LOG=/var/log/qosjail/kill.log

case $MANAGER in
load) MODE=none CAP=nocap ;;
android) MODE=wakelock CAP=cap ;;
android-trusted) MODE=wakelock CAP=nocap ;;
qosjail) MODE=qosjail CAP=nocap POLICY=/etc/qosjail/day.yaml ;;
# The same with suspend.dark_wake: keep-quiesced (the jail stays quiesced after a short wake).
qosjail-dark) MODE=qosjail CAP=nocap POLICY=/etc/qosjail/day-dark.yaml ;;
*) echo "QJ-DAY: ERROR manager '$MANAGER'"; exit 1 ;;
esac

wait_for() { # SECONDS CMD...: CMD every 0.2 s until it succeeds (a guard, never judged)
	_n=$(($1 * 5))
	shift
	while [ $_n -gt 0 ]; do
		"$@" && return 0
		sleep 0.2
		_n=$((_n - 1))
	done
	return 1
}
daemon_up() { qosjailctl status >/dev/null 2>&1; }
has_app() { [ -n "$(head -1 $JAIL/$1/cgroup.procs 2>/dev/null)" ]; }

echo none >/sys/power/pm_test
if [ $MANAGER = android ]; then
	# Android's model: every app with the WAKE_LOCK permission (CAP_BLOCK_SUSPEND,
	# given ambient to the untrusted apps by "day-tool as ... cap") may hold one.
	chmod 0666 /sys/power/wake_lock /sys/power/wake_unlock
fi
# android-trusted: the files stay root's 0644 and the untrusted apps have no
# CAP_BLOCK_SUSPEND: only the trusted programs (root) hold wake locks.

if [ $MODE = qosjail ]; then
	mkdir -p /var/log/qosjail /run/qosjail
	# A kernel wake lock until the setup hold is in: the daemon cycles as soon as it
	# starts with no hold, and its "qos" write waits while a wakeup source is active.
	echo day-setup >/sys/power/wake_lock
	qosjaild -p $POLICY -d 2>/tmp/qosjaild.log &
	DAEMON=$!
	wait_for 120 daemon_up || { echo "QJ-DAY: ERROR qosjaild did not start"; cat /tmp/qosjaild.log; exit 1; }
	# Awake while the day is set up.
	mkfifo /tmp/setup
	qosjailctl hold --name setup --why "bench/day setup" -- sh -c 'read x </tmp/setup' &
	wait_for 60 sh -c 'qosjailctl status --json | grep -q "\"setup\""'
	echo day-setup >/sys/power/wake_unlock
fi

untrusted() { # NAME CMD...: an untrusted app, as uid 1000 (jailed under qosjail)
	_name=$1
	shift
	if [ $MODE = qosjail ]; then
		qosjailctl run --app "$_name" -- day-tool as $UNTRUSTED $CAP "$@" &
		wait_for 60 has_app "$_name"
	else
		day-tool as $UNTRUSTED $CAP "$@" &
	fi
}
untrusted spinner day-tool spin 0
untrusted poller day-tool poll
untrusted hopper day-tool hop
untrusted hog day-tool hog

day-tool chat $MODE &
CHAT=$!
sleep 1
set -- $(day-tool clocks)
T0=$1
echo "QJ-DAY: START manager $MANAGER mode $MODE len $LEN boot $1 mono $2" \
	"success $(cat /sys/power/suspend_stats/success) fail $(cat /sys/power/suspend_stats/fail)"
day-tool modem $MODE "$T0" "${MODEM%:*}" "${MODEM#*:}" "$LEN" &
w=0
for win in $(echo "$MUSIC" | tr ',' ' '); do
	w=$((w + 1))
	day-tool music $MODE "$T0" $w "${win%:*}" "${win#*:}" &
done

# The manager takes over.
case $MANAGER in
load) day-tool loadsleep 5 5 & LOADSLEEP=$! ;;
android | android-trusted) echo mem >/sys/power/autosleep ;;
qosjail | qosjail-dark) echo >/tmp/setup ;;
esac

day-tool until $((T0 + LEN * 1000000000))
# Awake (wake lock "day-end") from here: the day's end, then stop the manager and report.
set -- $(day-tool clocks)
echo "QJ-DAY: END boot $1 mono $2 success $(cat /sys/power/suspend_stats/success)" \
	"fail $(cat /sys/power/suspend_stats/fail)"
case $MANAGER in
load) kill $LOADSLEEP ;;
android | android-trusted) echo off >/sys/power/autosleep ;;
qosjail | qosjail-dark)
	mkfifo /tmp/end
	qosjailctl hold --name day-end --why "bench/day report" -- sh -c 'read x </tmp/end' &
	wait_for 60 sh -c 'qosjailctl status --json | grep -q "\"day-end\""'
	;;
esac

# Trusted programs alive at the end (harmed: dead or stopped), the untrusted apps' fate.
st=$(sed 's/.*) \(.\).*/\1/' /proc/$CHAT/stat 2>/dev/null)
echo "QJ-DAY: TRUSTED chat pid $CHAT state ${st:-gone}"
if [ $MODE = qosjail ]; then
	for a in spinner poller hopper hog; do
		echo "QJ-DAY: APP $a tasks $(wc -l <$JAIL/$a/cgroup.procs 2>/dev/null || echo 0)" \
			"stopped $(grep "\"app\":\"$a\"" $LOG | grep -c '"action":"SIGSTOP"')" \
			"termed $(grep "\"app\":\"$a\"" $LOG | grep -c '"action":"SIGTERM"')" \
			"killed $(grep "\"app\":\"$a\"" $LOG | grep -c '"action":"SIGKILL"')"
	done
	echo "QJ-DAY: CYCLES $(grep -c '"action":"summary"' $LOG) suspended" \
		"$(grep '"action":"summary"' $LOG | grep -c '"reason":"suspended')"
	sed 's/^/QJ-DAY: KILLLOG /' $LOG
	qosjailctl status
	qosjailctl report --html /tmp/day.html
	echo "QJ-DAY: PAGE BEGIN"
	gzip -c /tmp/day.html | base64
	echo "QJ-DAY: PAGE END"
	echo >/tmp/end
	kill -TERM $DAEMON
	wait $DAEMON
	echo "QJ-DAY: DAEMON exit $?"
	# Its own log, for what the kill log does not say (a client's error, say).
	sed 's/^/QJ-DAY: DLOG /' /tmp/qosjaild.log
else
	for a in spinner poller hopper hog; do
		echo "QJ-DAY: APP $a tasks running stopped 0 termed 0 killed 0"
	done
fi
echo "QJ-DAY: DONE"
