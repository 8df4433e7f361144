#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""integration/metrics: a real qosjaild on the dry-run backend runs one cycle with a busy
app (it gets SIGSTOP) after a hold; `qosjailctl metrics` and the --metrics-file text
are parsed with prometheus_client's exposition-format parser and checked against that
cycle's kill log records and hold statistics.  Then a symlink planted where the metrics
file goes is refused, and the file it points to is left alone.
Debian's python3 (/usr/bin/python3) has python3-prometheus-client (scripts/setup)."""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
import qjdaemon  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

POLICY = """version: 1
suspend:
  backend: dry-run
  idle_delay: 1h            # cycles only when the test asks (qosjailctl suspend)
  dry_run_length: 200ms
jail:
  cgroup: @CG@
  busy_threshold: 5%
  sample_window: 300ms
escalation:
  ladder:
    - { name: stop, action: SIGSTOP, grace: 2s }
    - { name: kill, action: SIGKILL, grace: 2s }
apps:
  - name: busy
  - name: idle
  - name: desk
    trust: trusted
access:
  place: { uids: [0] }
  suspend: { uids: [0] }
  logs: { uids: [0] }
  hold: "*"
"""


def samples(text):
    """{(sample name, sorted labels): value} of every sample, and the families' types."""
    out, types = {}, {}
    for fam in text_string_to_metric_families(text):
        types[fam.name] = fam.type
        for s in fam.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            assert key not in out, f"duplicate sample {key}"
            out[key] = s.value
    return out, types


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def main():
    qjdaemon.require_root_and_cgroup2()
    if not os.path.exists(qjdaemon.QOSJAILD):
        sys.exit(f"no {qjdaemon.QOSJAILD}: build first")
    outdir = tempfile.mkdtemp(prefix="qj-metrics-")
    prom = os.path.join(outdir, "qosjail.prom")
    try:
        run(prom)
        refuse_symlink(outdir)
    finally:
        shutil.rmtree(outdir, ignore_errors=True)
    print("PASS")


def run(prom):
    with qjdaemon.Daemon(POLICY, metrics_file=prom) as d:
        # Written at start, before any cycle: the collector sees the daemon at once.
        before, _ = samples(open(prom).read())
        check(before[("qosjail_cycles_total", (("result", "suspended"),))] == 0,
              "cycles before the first")

        busy = d.run_in_jail("busy", [d.private_app("qj-busy")])
        d.ctl("hold", "--name", "sync", "--why", "uploading", "--", "/bin/true")
        d.ctl("hold", "--name", "net\"x\\y\nz", "--why", "odd name", "--", "/bin/true")
        cycle, summary = qjdaemon.run_cycle(d)
        check(summary["reason"] == "suspended", f"cycle ended {summary['reason']}")

        cli_text = d.ctl("metrics").stdout
        cli, types = samples(cli_text)
        file_text = open(prom).read()
        filed, _ = samples(file_text)

        # The types and the HELP/TYPE lines of every family.
        for name, t in (("qosjail_cycles", "counter"), ("qosjail_holds", "gauge"),
                        ("qosjail_quiesce_duration_seconds", "histogram"),
                        ("qosjail_actions", "counter"), ("qosjail_jail_tasks", "gauge"),
                        ("qosjail_backend_errors", "counter"),
                        ("qosjail_hold_seconds", "counter")):
            check(types.get(name) == t, f"{name}: type {types.get(name)}, want {t}")
        for line in cli_text.splitlines():
            if line.startswith("# TYPE "):
                check(f"# HELP {line.split()[2]} " in cli_text, f"no HELP for {line}")

        # Cycles by result: exactly the one this test ran.
        for result in ("suspended", "aborted", "interrupted", "failed"):
            want = 1 if result == "suspended" else 0
            got = cli[("qosjail_cycles_total", (("result", result),))]
            check(got == want, f"cycles {result}: {got}, want {want}")

        # The quiesce histogram: one observation, the summary's quiesce time.
        count = cli[("qosjail_quiesce_duration_seconds_count", ())]
        total = cli[("qosjail_quiesce_duration_seconds_sum", ())]
        check(count == 1, f"quiesce count {count}")
        check(int(total * 1000 + 1e-6) == summary["quiesce_ms"],
              f"quiesce sum {total} s, summary {summary['quiesce_ms']} ms")
        buckets = sorted((float(dict(k[1])["le"]), v) for k, v in cli.items()
                         if k[0] == "qosjail_quiesce_duration_seconds_bucket")
        for le, v in buckets:
            want = 1 if total <= le else 0
            check(v == want, f"bucket le={le}: {v}, want {want} (sum {total})")

        # Actions by app and rung: the kill log's records of the cycle, one for one.
        logged = {}
        for r in d.records():
            if r.get("cycle") == cycle and isinstance(r.get("rung"), int):
                key = (r["app"], r["rung_name"], r["action"])
                logged[key] = logged.get(key, 0) + 1
        check(("busy", "stop", "SIGSTOP") in logged, f"no SIGSTOP of busy logged: {logged}")
        counted = {(dict(k[1])["app"], dict(k[1])["rung"], dict(k[1])["action"]): v
                   for k, v in cli.items() if k[0] == "qosjail_actions_total"}
        check(counted == logged, f"actions {counted}, kill log {logged}")

        # Jail tasks by app: the busy process is back (continued) in its group.
        check(cli[("qosjail_jail_tasks", (("app", "busy"),))] == 1, "busy tasks")
        check(cli[("qosjail_jail_tasks", (("app", "idle"),))] == 0, "idle tasks")
        check(not any(k[0] == "qosjail_jail_tasks" and dict(k[1])["app"] == "desk"
                      for k in cli), "a trusted app has no jail group")
        check(busy in d.app_pids("busy"), "busy still jailed")

        # Holds by name: as the daemon's own statistics say (qosjailctl holds --json).
        stats = {s["name"]: s for s in json.loads(d.ctl("holds", "--json").stdout)["stats"]}
        check(set(stats) == {"sync", "net\"x\\y\nz"}, f"hold names {set(stats)}")
        for name, s in stats.items():
            # Label values read back as qosjailctl shows names (terminal escapes).
            label = name.replace("\\", "\\\\").replace("\n", "\\n")
            lab = (("name", label),)
            check(cli[("qosjail_hold_activations_total", lab)] == s["active_count"] == 1,
                  f"{name}: activations")
            check(cli[("qosjail_hold_active", lab)] == 0, f"{name}: active")
            check(round(cli[("qosjail_hold_seconds_total", lab)] * 1e6) ==
                  s["total_time_usec"], f"{name}: seconds held")
            check(round(cli[("qosjail_hold_prevent_suspend_seconds_total", lab)] * 1e6) ==
                  s["prevent_suspend_time_usec"], f"{name}: prevent_suspend")
        check(cli[("qosjail_holds", ())] == 0, "live holds")
        check(not any(k[0] == "qosjail_backend_errors_total" for k in cli),
              "backend errors on the dry-run backend")
        check(cli[("qosjail_dry_runs_total", ())] == 1, "dry runs")

        # The textfile: the same text, written after the cycle.
        check(filed == cli, "the metrics file and qosjailctl metrics differ:\n" +
              "\n".join(f"{k}: file {filed.get(k)} ctl {cli.get(k)}"
                        for k in set(filed) | set(cli) if filed.get(k) != cli.get(k)))
        check(not [f for f in os.listdir(os.path.dirname(prom)) if f != "qosjail.prom"],
              "a temporary file was left beside the metrics file")
        check(oct(os.stat(prom).st_mode & 0o777) == "0o644", "metrics file mode")


def refuse_symlink(outdir):
    target = os.path.join(outdir, "elsewhere")
    with open(target, "w") as f:
        f.write("untouched\n")
    link = os.path.join(outdir, "planted.prom")
    os.symlink(target, link)
    with qjdaemon.Daemon(POLICY, metrics_file=link) as d:
        qjdaemon.wait_for(lambda: "metrics file" in d.stderr(), "the refusal in the log")
        check("symlink" in d.stderr(), "the log does not say why: " + d.stderr())
    check(os.path.islink(link), "the symlink was replaced")
    check(open(target).read() == "untouched\n", "written through the symlink")


if __name__ == "__main__":
    main()
