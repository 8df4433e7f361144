#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Host side of bench/day (issue 29): boots the guest once per power manager, sends
the day's messages (a key press through QMP at seeded times, after system_wakeup when
the guest is in S3), reads what the guest and its kernel printed, and prints one
table with the day's physical limit, plus a timeline page per manager.

Everything in the table is measured: residency from the guest's CLOCK_BOOTTIME -
CLOCK_MONOTONIC over the day (the kernel adds the RTC-measured sleep to BOOTTIME, so
each suspend carries up to a second of rounding; QEMU's own SUSPEND/WAKEUP events give
the host's view beside it), suspends from /sys/power/suspend_stats, wake-to-sleep
from the kernel's "Waking up from system sleep state S3" to the next "Preparing to
enter system sleep state S3" (printk time, which does not count the sleep), messages
from the chat app's two evdev clients (late: BOOTTIME - MONOTONIC grew between the
key's arrival and its read, i.e. the machine slept with it unread)."""
import argparse
import base64
import datetime
import gzip
import json
import os
import queue
import random
import re
import socket
import statistics
import subprocess
import sys
import threading
import time

MANAGERS = ["load", "android", "android-trusted", "qosjail", "qosjail-dark"]
TITLES = {
    "load": "1 load-based idle suspend",
    "android": "2 Android, wake locks for all",
    "android-trusted": "3 Android, trusted wake locks",
    "qosjail": "4 qosjail",
    "qosjail-dark": "4 qosjail, dark_wake: keep-quiesced",
}
MODEM_FIRST, MODEM_PERIOD, MODEM_MS = 30, 60, 200
ASLEEP = "asleep in S3 (QEMU)"  # the host's view of each sleep, a row of the page
MUSIC_SLEPT_S = 0.1  # a window is honoured when the machine did not sleep while it played


def day_plan(length, seed):
    """The day: music windows, modem alarms and message times (day seconds)."""
    rng = random.Random(seed)
    music = [(round(length * 0.25), round(length * 0.35)),
             (round(length * 0.65), round(length * 0.75))]
    modem = list(range(MODEM_FIRST, length, MODEM_PERIOD))
    n = max(3, length // 75)
    msgs = []
    while len(msgs) < n:
        t = round(rng.uniform(10, length - 20), 1)
        if all(abs(t - m) >= 5 for m in msgs):
            msgs.append(t)
    need = sum(e - s for s, e in music) + len(modem) * MODEM_MS / 1000
    return {"len": length, "seed": seed, "music": music, "modem": modem,
            "messages": sorted(msgs), "need_s": need, "limit": 1 - need / length}


class Qmp:
    """A QMP client: commands in order, events (with QEMU's timestamps) kept aside."""

    def __init__(self, path, timeout=60):
        end = time.time() + timeout
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX)
                self.sock.connect(path)
                break
            except OSError:
                if time.time() > end:
                    raise
                time.sleep(0.1)
        self.f = self.sock.makefile("rwb")
        self.events, self.replies = [], queue.Queue()
        json.loads(self.f.readline())
        threading.Thread(target=self._read, daemon=True).start()
        self.cmd("qmp_capabilities")

    def _read(self):
        for line in self.f:
            msg = json.loads(line)
            if "event" in msg:
                ts = msg["timestamp"]
                self.events.append((msg["event"], ts["seconds"] + ts["microseconds"] / 1e6))
            else:
                self.replies.put(msg)
        self.replies.put({"error": "closed"})

    def cmd(self, name, **args):
        self.f.write(json.dumps({"execute": name, "arguments": args}).encode() + b"\n")
        self.f.flush()
        reply = self.replies.get(timeout=30)
        if "error" in reply:
            raise RuntimeError(f"QMP {name}: {reply['error']}")
        return reply["return"]


class Console:
    """The guest's serial console (a file QEMU writes), read as it grows."""

    def __init__(self, path):
        self.path, self.pos, self.lines, self.part = path, 0, [], b""

    def poll(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                data = f.read()
        except FileNotFoundError:
            return
        self.pos += len(data)
        data = self.part + data
        *full, self.part = data.split(b"\n")
        self.lines += [x.decode("utf-8", "replace").rstrip("\r") for x in full]

    def count(self, text):
        return sum(text in x for x in self.lines)

    def find(self, prefix):
        return [x[x.index(prefix):] for x in self.lines if prefix in x]


# Message n is the n-th of these keys (qcode, Linux key code): the chat app prints the
# code, so a resent copy is told apart.
KEYS = [("a", 30), ("b", 48), ("c", 46), ("d", 32), ("e", 18), ("f", 33), ("g", 34),
        ("h", 35), ("i", 23), ("j", 36), ("k", 37), ("l", 38), ("m", 50), ("n", 49),
        ("o", 24), ("p", 25), ("q", 16), ("r", 19), ("s", 31), ("t", 20), ("u", 22),
        ("v", 47), ("w", 17), ("x", 45), ("y", 21), ("z", 44)]
RESEND_S = 1.5


def send_message(qmp, con, rec):
    """One attempt at message @rec: wake the guest when it is in S3 (once its resume
    completed: a key queued while the i8042 is suspended is flushed by its resume), then
    a press and release of the message's key."""
    if qmp.cmd("query-status")["status"] == "suspended":
        rec.setdefault("woke_sleeps", []).append(
            con.count("Waking up from system sleep state S3"))
        exits = con.count("PM: suspend exit")
        qmp.cmd("system_wakeup")
        end = time.time() + 30
        while con.count("PM: suspend exit") <= exits and time.time() < end:
            time.sleep(0.02)
            con.poll()
    for down in (True, False):
        qmp.cmd("input-send-event", events=[{"type": "key", "data": {
            "down": down, "key": {"type": "qcode", "data": rec["key"]}}}])
    rec.setdefault("sent", []).append(time.time())


def read_codes(con):
    # A kernel line can cut a MSG line short on the console: one without its code is
    # not counted here (the message is sent again; measure() derives what it lost).
    return {int(f["code"]) for f in (fields(x) for x in con.find("QJ-DAY: MSG"))
            if "code" in f}


def deliver(qmp, con, run, outstanding):
    """The network's retry: a message not read RESEND_S after an attempt is sent again
    (after waking the guest if it sleeps) until the chat app read it.  A copy that was
    already in the guest is then read late, which the chat app reports; one the keyboard
    dropped while it was being reset at resume is simply delivered again."""
    done = read_codes(con)
    for rec in list(outstanding):
        if rec["code"] in done:
            outstanding.remove(rec)
        elif time.time() >= run["t0_host"] + rec["due"] and (
                not rec.get("sent") or time.time() - rec["sent"][-1] >= RESEND_S):
            send_message(qmp, con, rec)


def boot_day(manager, plan, args):
    """Boots the guest for one manager and runs its day; returns the raw run."""
    out = os.path.join(args.out, manager)
    os.makedirs(out, exist_ok=True)
    log, sock = os.path.join(out, "console.log"), os.path.join(out, "qmp.sock")
    for p in (log, sock):
        if os.path.exists(p):
            os.unlink(p)
    music = ",".join(f"{s}:{e}" for s, e in plan["music"])
    append = (f"console=ttyS0 panic=-1 no_console_suspend kunit.enable=0 "
              f"qjday.manager={manager} qjday.len={plan['len']} qjday.music={music} "
              f"qjday.modem={MODEM_FIRST}:{MODEM_PERIOD}")
    cmd = ["qemu-system-x86_64", "-accel", "tcg", "-m", "1024", "-smp", "2",
           "-display", "none", "-monitor", "none", "-no-reboot",
           "-serial", f"file:{log}", "-qmp", f"unix:{sock},server=on,wait=off",
           "-kernel", args.bzimage, "-initrd", args.initrd, "-append", append]
    wall0 = time.time()
    qemu = subprocess.Popen(cmd, stdin=subprocess.DEVNULL)
    limit = wall0 + args.boot_limit + plan["len"] * 1.5 + 300
    qmp, con = Qmp(sock), Console(log)
    run = {"manager": manager, "messages": [], "load_before": os.getloadavg()}
    try:
        while not con.find("QJ-DAY: START") and qemu.poll() is None:
            if time.time() > wall0 + args.boot_limit:
                raise RuntimeError("no QJ-DAY: START")
            time.sleep(0.05)
            con.poll()
        run["t0_host"] = time.time()
        run["messages"] = [{"n": i + 1, "due": t, "key": KEYS[i][0], "code": KEYS[i][1]}
                           for i, t in enumerate(plan["messages"])]
        outstanding = list(run["messages"])
        end_s = run["t0_host"] + plan["len"]
        while qemu.poll() is None and not con.find("QJ-DAY: DONE"):
            if time.time() < end_s - 2:
                deliver(qmp, con, run, outstanding)
            if time.time() > limit:
                raise RuntimeError("the day did not end")
            time.sleep(0.05)
            con.poll()
        qemu.wait(timeout=120)
    finally:
        if qemu.poll() is None:
            qemu.kill()
            qemu.wait()
        con.poll()
    run.update(lines=con.lines, qmp_events=qmp.events, wall_s=time.time() - wall0,
               load_after=os.getloadavg())
    return run


NUM = r"(-?\d+)"


def fields(line):
    """'QJ-DAY: WHAT k v k v ...' -> dict of the int-looking values."""
    toks = line[line.find("QJ-DAY:"):].split()
    return {toks[i]: int(toks[i + 1]) for i in range(1, len(toks) - 1)
            if re.fullmatch(NUM, toks[i + 1])}


def kernel_times(lines, text):
    out = []
    for x in lines:
        m = re.search(r"\[\s*(\d+\.\d+)\]", x)
        if m and text in x:
            out.append(float(m.group(1)))
    return out


def measure(run, plan):
    """The table's row from one run."""
    L = run["lines"]
    grab = lambda p: [fields(x) for x in L if p in x]  # noqa: E731
    start, end = grab("QJ-DAY: START")[0], grab("QJ-DAY: END")[0]
    day_ns = end["boot"] - start["boot"]
    slept_ns = (end["boot"] - end["mono"]) - (start["boot"] - start["mono"])
    r = {"manager": run["manager"], "day_s": day_ns / 1e9, "slept_s": slept_ns / 1e9,
         "residency": slept_ns / day_ns, "suspends": end["success"] - start["success"],
         "failed": end["fail"] - start["fail"], "wall_s": run["wall_s"],
         "load": (run["load_before"][0], run["load_after"][0])}
    r["of_limit"] = r["residency"] / plan["limit"]
    # QEMU's view: time between its SUSPEND and WAKEUP events during the day.
    t0, t1 = run["t0_host"], run["t0_host"] + day_ns / 1e9
    qs, s_at = 0.0, None
    for ev, ts in run["qmp_events"]:
        if ev == "SUSPEND":
            s_at = ts
        elif ev == "WAKEUP" and s_at is not None:
            qs += max(0.0, min(ts, t1) - max(s_at, t0))
            s_at = None
    r["qemu_s3_s"] = qs
    # Messages.
    # A kernel line can cut a MSG line short on the console: what it lost is derived.
    reads = [m for m in grab("QJ-DAY: MSG") if "code" in m and "arrived" in m and "read" in m]
    for m in reads:
        m.setdefault("late", int(m.get("slept_between", 0) > 50_000_000))
    by_code = {}
    for m in reads:
        by_code.setdefault(m["code"], []).append(m)
    sent = [m for m in run["messages"] if m.get("sent")]
    r["sent"] = len(sent)
    r["attempts"] = sum(len(m["sent"]) for m in sent)
    r["read"] = sum(1 for m in sent if m["code"] in by_code)
    # Late: a copy the machine slept on while it was unread.
    r["late"] = sum(1 for m in sent if any(c["late"] for c in by_code.get(m["code"], [])))
    r["lost"] = r["sent"] - r["read"]
    r["msg_delay_s"] = [(c[0]["read"] - c[0]["arrived"]) / 1e9 for c in by_code.values()]
    # Music windows: started on time, and no sleep while it played.
    ok, r["music_late_s"] = 0, 0.0
    starts = {f["MUSIC"]: f for f in grab("QJ-DAY: MUSIC") if "start" in f}
    ends = {f["MUSIC"]: f for f in grab("QJ-DAY: MUSIC") if "end" in f}
    for w, (s, _) in enumerate(plan["music"], 1):
        if w in starts and w in ends:
            late = (starts[w]["start"] - start["boot"]) / 1e9 - s
            r["music_late_s"] = max(r["music_late_s"], late)
            if ends[w]["slept"] / 1e9 <= MUSIC_SLEPT_S:
                ok += 1
    r["music_ok"], r["music_n"] = ok, len(plan["music"])
    # Wake-to-sleep after each RTC wake for a modem check: the wakes the host made for
    # a message, and those that opened a music window (QEMU's WAKEUP time, host clock,
    # inside one), are left out.  The k-th "Waking up" is QEMU's k-th WAKEUP.
    wakes = kernel_times(L, "Waking up from system sleep state S3")
    sleeps = kernel_times(L, "Preparing to enter system sleep state S3")
    host_woke = {k for m in run["messages"] for k in m.get("woke_sleeps", [])}
    qwake = [ts for ev, ts in run["qmp_events"] if ev == "WAKEUP"]
    lat = []
    for k, w in enumerate(wakes):
        nxt = [s for s in sleeps if s > w]
        tw = qwake[k] - run["t0_host"] if k < len(qwake) else None
        if tw is None or any(s - 1 <= tw < e for s, e in plan["music"]):
            continue
        if k not in host_woke and nxt:
            lat.append(nxt[0] - w)
    r["w2s"] = lat
    # The apps.
    apps = {x.split()[2]: fields(x) for x in L if "QJ-DAY: APP" in x}
    r["stopped"] = sum(1 for a in apps.values() if a.get("stopped", 0) > 0)
    r["killed"] = sum(1 for a in apps.values() if a.get("killed", 0) + a.get("termed", 0) > 0)
    chat = [x for x in L if "QJ-DAY: TRUSTED chat" in x]
    modem = grab("QJ-DAY: MODEM")
    harmed = []
    if not chat or chat[0].split()[-1] not in ("S", "R"):
        harmed.append("chat")
    if len(modem) < len(plan["modem"]) or any(m["status"] != 0 for m in modem):
        harmed.append(f"modem {len(modem)}/{len(plan['modem'])}")
    if len(starts) < len(plan["music"]):
        harmed.append(f"music {len(starts)}/{len(plan['music'])}")
    r["harmed"] = harmed
    r["hog"] = [x.split("QJ-DAY: HOG ")[1] for x in L if "QJ-DAY: HOG" in x]
    return r


def rfc3339(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def hold_stats(periods):
    """The page's hold statistics from the drawn periods, in the fields of the daemon's
    (qj_holds()): no daemon answers for this page, so without them it said "the daemon
    did not answer".  "prevented suspend" is the time held while the guest was awake."""
    asleep = [(p["start_usec"], p["end_usec"]) for p in periods if p["name"] == ASLEEP]
    stats = {}
    for p in periods:
        a, b = p["start_usec"], p["end_usec"]
        s = stats.setdefault(p["name"], {"name": p["name"], "active": 0, "active_count": 0,
                                         "total_time_usec": 0, "max_time_usec": 0,
                                         "prevent_suspend_time_usec": 0, "expire_count": 0})
        s["active_count"] += 1
        s["total_time_usec"] += b - a
        s["max_time_usec"] = max(s["max_time_usec"], b - a)
        if p["name"] != ASLEEP:
            slept = sum(max(0, min(b, y) - max(a, x)) for x, y in asleep)
            s["prevent_suspend_time_usec"] += b - a - slept
    return list(stats.values())


def write_page(run, plan, args, out):
    """The timeline: qosjail's own page from the guest; for the others, their records
    (QEMU's SUSPEND/WAKEUP as cycles, the trusted programs' needs and wake locks as
    hold rows) drawn by the same code (bench-day-page)."""
    L = run["lines"]
    if run["manager"].startswith("qosjail"):
        # The daemon's own page (qosjailctl report --html in the guest), beside the one
        # drawn here from its kill log and the day's lines like the other managers'.
        try:
            a, b = L.index("QJ-DAY: PAGE BEGIN"), L.index("QJ-DAY: PAGE END")
            b64 = "".join(x for x in L[a + 1:b] if re.fullmatch(r"[A-Za-z0-9+/=]+", x))
            with open(os.path.join(os.path.dirname(out), "qosjailctl-report.html"), "wb") as f:
                f.write(gzip.decompress(base64.b64decode(b64)))
        except (ValueError, OSError) as e:
            print(f"bench/day: no qosjailctl report page: {e}", file=sys.stderr)
    t0 = run["t0_host"]
    boot0 = fields([x for x in L if "QJ-DAY: START" in x][0])["boot"]
    at = lambda ns: t0 + (ns - boot0) / 1e9  # noqa: E731
    end = at(fields([x for x in L if "QJ-DAY: END" in x][0])["boot"])
    recs, s_at, k = [], None, 0
    for x in L:
        for tag in ("QJ-DAY: KILLLOG ", "QJ-DAY: SUMMARY "):
            if tag in x and run["manager"].startswith("qosjail"):
                try:
                    recs.append(json.loads(x.split(tag, 1)[1]))
                except ValueError:
                    pass
    for ev, ts in ([] if recs else run["qmp_events"]):
        if ev == "SUSPEND":
            s_at = ts
        elif ev == "WAKEUP" and s_at is not None and s_at >= t0:
            k += 1
            recs.append({"ts": rfc3339(ts), "cycle": k, "action": "summary",
                         "reason": "suspended", "outcome": "quiesced", "quiesce_ms": 0,
                         "window_ms": int((ts - s_at) * 1000), "actions": 0,
                         "stopped": 0, "killed": 0})
            s_at = None
    periods = []
    per = lambda n, a, b: periods.append({  # noqa: E731
        "name": n, "start_usec": int(a * 1e6), "end_usec": int(b * 1e6), "expired": False})
    s_at = None
    for ev, ts in run["qmp_events"]:  # the host's view of each sleep
        if ev == "SUSPEND":
            s_at = ts
        elif ev == "WAKEUP" and s_at is not None:
            per(ASLEEP, s_at, ts)
            s_at = None
    for f in (fields(x) for x in L if "QJ-DAY: MODEM" in x):
        per("modem (handler)", at(f["start"]), at(f["done"]))
    mus = [fields(x) for x in L if "QJ-DAY: MUSIC" in x]
    for s in (m for m in mus if "start" in m):
        e = [m for m in mus if "end" in m and m["MUSIC"] == s["MUSIC"]]
        per("music (window)", at(s["start"]), at(e[0]["end"]) if e else end)
    for m in (fields(x) for x in L if "QJ-DAY: MSG" in x):
        per("chat (message unread)", at(m["arrived"]), at(m["read"]))
    if any("wake_lock held" in h for h in (x for x in L if "QJ-DAY: HOG" in x)):
        per("hog (wake lock)", t0, end)
    base = os.path.splitext(out)[0]
    with open(base + ".records", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in recs)
    with open(base + ".history", "w") as f:
        json.dump({"periods": periods, "active": [], "stats": hold_stats(periods)}, f)
    since = min([t0] + [p["start_usec"] / 1e6 for p in periods])
    subprocess.run([args.page_tool, base + ".records", base + ".history",
                    str(int((since - 5) * 1e6)), str(int((end + 5) * 1e6)), out],
                   check=True, stdout=subprocess.DEVNULL)
    # The same page; its title names the manager whose records it draws.
    with open(out) as f:
        html = f.read().replace("qosjail timeline", f"bench/day: {TITLES[run['manager']]}", 2)
    with open(out, "w") as f:
        f.write(html)
    return out


def screenshot(page):
    """A PNG of the page beside it (headless Chromium, when installed)."""
    if not page or not os.access("/usr/bin/chromium", os.X_OK):
        return None
    png = os.path.splitext(page)[0] + ".png"
    tmp = os.path.dirname(page)
    r = subprocess.run(["/usr/bin/chromium", "--headless=new", "--no-sandbox", "--disable-gpu",
                        "--no-first-run", f"--user-data-dir={tmp}/chromium",
                        "--window-size=1260,700", "--hide-scrollbars", f"--screenshot={png}",
                        f"file://{page}"], capture_output=True, timeout=300)
    return png if r.returncode == 0 else None


def ms(v):
    return f"{v * 1000:.0f}" if v is not None else "-"


def table(rows, plan):
    print(f"\nThe day: {plan['len']} s of guest time, seed {plan['seed']}; music "
          f"{plan['music']}, modem alarms at {plan['modem']} s ({MODEM_MS} ms handler), "
          f"{len(plan['messages'])} messages at {plan['messages']} s.")
    print(f"Physical limit: awake {plan['need_s']:.1f} s (music windows + handlers; a "
          f"message's read is <1 ms), residency limit {plan['limit'] * 100:.1f} %.\n")
    head = ("| manager | residency (S3 s / day s) | of limit | QEMU S3 s | suspends "
            "| msgs late / lost (of sent) | music windows (latest start) | modem wake-to-sleep ms median / worst (n) "
            "| untrusted stopped / killed | trusted harmed | wall s | load 1-min before/after |")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for r in rows:
        w = r["w2s"]
        w2s = (f"{ms(statistics.median(w))} / {ms(max(w))} ({len(w)})" if w else "- (0)")
        z = lambda v: 0.0 if abs(v) < 5e-3 else v  # noqa: E731 (no "-0": rounding)
        print(f"| {TITLES[r['manager']]} | {z(r['residency']) * 100:.1f} % "
              f"({(0.0 if abs(r['slept_s']) < 0.5 else r['slept_s']):.0f} / {r['day_s']:.0f}) | {z(r['of_limit']):.2f} "
              f"| {r['qemu_s3_s']:.0f} | {r['suspends']} (+{r['failed']} failed) "
              f"| {r['late']} / {r['lost']} (of {r['sent']}; {r['attempts']} sends) "
              f"| {r['music_ok']}/{r['music_n']} (start +{r['music_late_s']:.1f} s) | {w2s} | {r['stopped']} / {r['killed']} "
              f"| {', '.join(r['harmed']) or 'none'} | {r['wall_s']:.0f} "
              f"| {r['load'][0]:.1f} / {r['load'][1]:.1f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bzimage")
    ap.add_argument("--initrd")
    ap.add_argument("--out", required=True)
    ap.add_argument("--page-tool")
    ap.add_argument("--len", type=int, default=600)
    ap.add_argument("--seed", type=int, default=29)
    ap.add_argument("--boot-limit", type=int, default=300)
    ap.add_argument("--table-only", action="store_true",
                    help="print the table again from the runs saved in --out")
    ap.add_argument("--no-png", action="store_true", help="no screenshot of the pages")
    ap.add_argument("managers", nargs="*", default=MANAGERS)
    args = ap.parse_args()
    plan = day_plan(args.len, args.seed)
    if args.table_only:  # the table and the pages again, from the saved runs
        rows = []
        for m in args.managers:
            path = os.path.join(args.out, m, "run.json")
            if os.path.exists(path):
                run = json.load(open(path))
                rows.append(measure(run, plan))
                if args.page_tool:
                    page = write_page(run, plan, args, os.path.join(args.out, m,
                                                                    "timeline.html"))
                    if not args.no_png:
                        screenshot(page)
        table(rows, plan)
        return
    rows, failed, t = [], [], time.time()
    for m in args.managers:
        if m not in MANAGERS:
            sys.exit(f"bench/day: unknown manager {m}")
        try:
            run = boot_day(m, plan, args)
        except RuntimeError as e:
            print(f"bench/day: {m}: FAILED: {e} (console: {args.out}/{m}/console.log)",
                  file=sys.stderr)
            failed.append(m)
            continue
        with open(os.path.join(args.out, m, "run.json"), "w") as f:
            json.dump(run, f)
        r = measure(run, plan)
        page = write_page(run, plan, args, os.path.join(args.out, m, "timeline.html"))
        if not args.no_png:
            screenshot(page)
        print(f"bench/day: {m}: {r['residency'] * 100:.1f} % in S3, {r['suspends']} suspends, "
              f"{r['wall_s']:.0f} s; page {page}; hog: {'; '.join(r['hog'])}", flush=True)
        rows.append(r)
    table(rows, plan)
    print(f"\nWall time {time.time() - t:.0f} s; kernel {os.path.basename(args.bzimage)} "
          f"({args.bzimage}); results in {args.out}")
    with open(os.path.join(args.out, "table.json"), "w") as f:
        json.dump({"plan": plan, "rows": rows}, f)
    if failed:
        sys.exit(f"bench/day: no day for {', '.join(failed)}")


if __name__ == "__main__":
    main()
