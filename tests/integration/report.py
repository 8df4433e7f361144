#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""integration/report: a real qosjaild on the dry-run backend runs two cycles with a busy
app whose command name is "<script>" (it gets SIGSTOP each time) and a hold whose name
is markup; `qosjailctl report --html` writes the page, headless Chromium (Debian's)
loads it, takes a screenshot (a PNG, non-empty) and dumps its DOM, and the DOM must
hold one g.cycle per cycle and one g.action per action of the kill log, with their
ids, the hold's period, and no element the names could have smuggled in.
QJ_REPORT_SCREENSHOT=PATH keeps the screenshot (docs/images/report.png is one)."""
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
import qjdaemon  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
EVIL_HOLD = "<img src=x onerror=alert(1)>"
POLICY = """version: 1
suspend:
  backend: dry-run
  idle_delay: 1h            # cycles only when the test asks (qosjailctl suspend)
  dry_run_length: 300ms
jail:
  cgroup: @CG@
  busy_threshold: 5%
  sample_window: 300ms
escalation:
  ladder:
    - { name: stop, action: SIGSTOP, grace: 2s }
    - { name: kill, action: SIGKILL, grace: 2s }
apps:
  - name: browser
  - name: mail
access:
  place: { uids: [0] }
  suspend: { uids: [0] }
  logs: { uids: [0] }
  hold: "*"
"""


class Dom(HTMLParser):
    """Elements of the dumped DOM: tag and attributes, and the text of every node."""

    def __init__(self):
        super().__init__()
        self.elements, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def having(self, tag, cls):
        return [a for t, a in self.elements if t == tag and cls in a.get("class", "").split()]


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def chromium(tmp, *args):
    r = subprocess.run([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu",
                        "--no-first-run", f"--user-data-dir={tmp}/chromium", *args],
                       capture_output=True, timeout=300)
    check(r.returncode == 0, f"chromium {args}: exit {r.returncode}: {r.stderr[-2000:]!r}")
    return r.stdout.decode()


def main():
    qjdaemon.require_root_and_cgroup2()
    if not os.access(CHROMIUM, os.X_OK):
        if os.environ.get("CI") == "true":
            sys.exit("FAIL: chromium not installed (scripts/setup installs it)")
        print("skipped: no /usr/bin/chromium (scripts/setup installs it)")
        sys.exit(qjdaemon.SKIP)
    with qjdaemon.Daemon(POLICY) as d:
        # A jailed program chooses its command name: "<script>" (the comm of its file).
        spin = d.private_app("qj-busy", "<script>")
        d.run_in_jail("browser", [spin])
        d.ctl("hold", "--name", EVIL_HOLD, "--why", "markup", "--", "/bin/sleep", "0.2")
        d.ctl("hold", "--name", "sync", "--why", "upload", "--", "/bin/true")
        qjdaemon.run_cycle(d)
        d.run_in_jail("mail", [d.private_app("qj-busy")])
        qjdaemon.run_cycle(d)

        page = os.path.join(d.tmp, "report.html")
        out = d.ctl("report", "--html", page).stdout
        records = d.records()
        cycles = sorted({r["cycle"] for r in records if r.get("action") == "summary"})
        actions = [r for r in records if isinstance(r.get("rung"), int)]
        check(len(cycles) == 2, f"cycles in the kill log: {cycles}")
        check(any(r["comm"] == "<script>" for r in actions), "no action against <script>")
        check(f"{len(cycles)} cycles, {len(actions)} actions" in out, f"verb said {out!r}")
        html = open(page).read()
        check("http:" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "") and
              "https:" not in html, "the page refers to the network")

        shot = os.path.join(d.tmp, "report.png")
        chromium(d.tmp, "--window-size=1260,900", "--hide-scrollbars",
                 f"--screenshot={shot}", f"file://{page}")
        with open(shot, "rb") as f:
            png = f.read()
        check(png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10000,
              f"screenshot: {len(png)} bytes")
        if os.environ.get("QJ_REPORT_SCREENSHOT"):
            shutil.copy(shot, os.environ["QJ_REPORT_SCREENSHOT"])

        dom = Dom()
        dom.feed(chromium(d.tmp, "--dump-dom", f"file://{page}"))

        # Nothing the names brought in became an element.
        check(not [a for t, a in dom.elements if t in ("script", "img", "iframe")],
              "an element came from a name")
        check(not [a for _, a in dom.elements if any(k.startswith("on") for k in a)],
              "an event handler attribute came from a name")
        text = "".join(dom.text)
        check("<script>" in text and EVIL_HOLD in text, "the names are not shown as text")

        # Every cycle, with its id, and its states.
        drawn = sorted(int(a["data-cycle"]) for a in dom.having("g", "cycle"))
        check(drawn == cycles, f"cycles drawn {drawn}, kill log {cycles}")
        states = [a["data-state"] for a in dom.having("rect", "state")]
        for s in ("quiescing", "suspending", "resumed"):
            check(states.count(s) == len(cycles), f"{s} drawn {states.count(s)} times")

        # Every action, by cycle, app, pid and action.
        want = sorted((r["cycle"], r["app"], r["pid"], r["action"]) for r in actions)
        got = sorted((int(a["data-cycle"]), a["data-app"], int(a["data-pid"]),
                      a["data-action"]) for a in dom.having("g", "action"))
        check(got == want, f"actions drawn {got}, kill log {want}")
        check({a for _, a, _, _ in want} == {"browser", "mail"}, f"apps {want}")

        # Every hold period, and the statistics table row of each name.
        holds = sorted(a["data-hold"] for a in dom.having("rect", "hold"))
        check(holds == sorted([EVIL_HOLD, "sync"]), f"hold periods drawn {holds}")
        rows = sorted(a["data-hold"] for t, a in dom.elements
                      if t == "tr" and "data-hold" in a)
        check(rows == sorted([EVIL_HOLD, "sync"]), f"hold table rows {rows}")
    print("PASS")


if __name__ == "__main__":
    main()
