# SPDX-License-Identifier: LGPL-2.1-or-later
"""A real qosjaild for the Python tests: the build tree's binaries, a YAML policy on
the dry-run backend, a jail in the tests' own cgroup subtree (qosjail-test-PID, the
name tests/support/itest.c uses, so a stale one is swept the same way), a scratch
directory for the socket, state and kill log, and a teardown that stops the daemon,
kills what the test started and removes all of it, even when the test failed.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77
BUILD = os.environ.get("QJ_BUILD_DIR", os.getcwd())
SOURCE = os.environ.get("QJ_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
QOSJAILD = os.path.join(BUILD, "controller", "qosjaild")
QOSJAILCTL = os.path.join(BUILD, "controller", "qosjailctl")
V1_CPU = "/sys/fs/cgroup/cpu"


def v2_root():
    if os.path.exists("/sys/fs/cgroup/unified/cgroup.procs"):
        return "/sys/fs/cgroup/unified"
    return "/sys/fs/cgroup"


def require_root_and_cgroup2():
    """Exit 77 (skip) when the machine cannot run it; under CI=true that is a failure."""
    why = None
    if os.geteuid() != 0:
        why = "needs root"
    elif not os.path.exists(os.path.join(v2_root(), "cgroup.procs")):
        why = "needs a cgroup2 hierarchy"
    if why:
        if os.environ.get("CI") == "true":
            sys.exit(f"FAIL: unavailable under CI: {why}")
        print(f"skipped: {why}")
        sys.exit(SKIP)


def wait_for(pred, what, timeout=120.0, step=0.05):
    """Polls @pred until it returns something true; the limit is generous on purpose."""
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(step)


def remove_cgroup_tree(path, v2):
    if not os.path.isdir(path):
        return
    for name in os.listdir(path):
        sub = os.path.join(path, name)
        if not os.path.isdir(sub):
            continue
        if v2:
            for knob, value in (("cgroup.freeze", "0"), ("cgroup.kill", "1")):
                try:
                    with open(os.path.join(sub, knob), "w") as f:
                        f.write(value)
                except OSError:
                    pass

            def empty():
                try:
                    with open(os.path.join(sub, "cgroup.events")) as f:
                        return "populated 0" in f.read()
                except OSError:
                    return True

            wait_for(empty, f"{sub} to empty", timeout=30)
        for _ in range(200):
            try:
                os.rmdir(sub)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.05)
    try:
        os.rmdir(path)
    except OSError:
        pass


class Daemon:
    def __init__(self, policy_text, metrics_file=None):
        self.tmp = tempfile.mkdtemp(prefix="qj-pytest-")
        self.cg = f"{v2_root()}/qosjail-test-{os.getpid()}"
        self.cpu = f"{V1_CPU}/qosjail-test-{os.getpid()}" if os.path.isdir(V1_CPU) else None
        self.socket = os.path.join(self.tmp, "qosjail.sock")
        self.log_path = os.path.join(self.tmp, "kill.log")
        self.policy = os.path.join(self.tmp, "policy.yaml")
        self.daemon_log = os.path.join(self.tmp, "qosjaild.stderr")
        self.children = []
        self.proc = None
        text = policy_text.replace("@DIR@", self.tmp).replace("@CG@", self.cg)
        if self.cpu and "cpu_cgroup" not in text:  # the v1 cpu twin of a hybrid layout
            text = text.replace(f"  cgroup: {self.cg}\n",
                                f"  cgroup: {self.cg}\n  cpu_cgroup: {self.cpu}\n")
        if "\njail:" not in text:
            text += f"jail:\n  cgroup: {self.cg}\n"
            if self.cpu:
                text += f"  cpu_cgroup: {self.cpu}\n"
        if "\nlog:" not in text:
            text += f"log:\n  path: {self.log_path}\n"
        with open(self.policy, "w") as f:
            f.write(text)
        args = [QOSJAILD, "-d", "--policy", self.policy, "--socket", self.socket,
                "--state-dir", os.path.join(self.tmp, "state")]
        if metrics_file:
            args += ["--metrics-file", metrics_file]
        with open(self.daemon_log, "w") as err:
            self.proc = subprocess.Popen(args, stdout=err, stderr=err)
        wait_for(lambda: self.proc.poll() is not None or
                 self.ctl("status", check=False).returncode == 0, "qosjaild to answer")
        if self.proc.poll() is not None:
            raise AssertionError(f"qosjaild exited {self.proc.returncode}: {self.stderr()}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def stderr(self):
        with open(self.daemon_log, errors="replace") as f:
            return f.read()

    def ctl(self, *args, check=True):
        r = subprocess.run([QOSJAILCTL, "-s", self.socket, *args], capture_output=True,
                           text=True, errors="replace")
        if check and r.returncode != 0:
            raise AssertionError(f"qosjailctl {' '.join(args)}: exit {r.returncode}: "
                                 f"{r.stderr}")
        return r

    def private_app(self, app, name=None):
        """A private copy of tests/apps/@app (as @name): no other qosjail instance on the
        machine matches it by path and moves it into its own jail."""
        d = os.path.join(self.tmp, "bin")
        os.makedirs(d, exist_ok=True)
        dst = os.path.join(d, name or app)
        shutil.copy(os.path.join(BUILD, "tests", "apps", app), dst)
        return dst

    def run_in_jail(self, app, argv):
        """qosjailctl run --app @app -- @argv in the background; returns the jailed pid."""
        p = subprocess.Popen([QOSJAILCTL, "-s", self.socket, "run", "--app", app, "--", *argv],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.children.append(p)
        p.stdout.readline()  # the test app's "ready"
        return int(wait_for(lambda: self.app_pids(app), f"a process in app {app}")[0])

    def app_pids(self, app):
        try:
            with open(os.path.join(self.cg, app, "cgroup.procs")) as f:
                return [int(x) for x in f.read().split()]
        except OSError:
            return []

    def records(self):
        try:
            with open(self.log_path) as f:
                return [json.loads(line) for line in f if line.startswith("{")]
        except FileNotFoundError:
            return []

    def summary(self, cycle):
        for r in self.records():
            if r.get("action") == "summary" and r.get("cycle") == cycle:
                return r
        return None

    def close(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for p in self.children:
            if p.poll() is None:
                p.kill()
        remove_cgroup_tree(self.cg, True)
        if self.cpu:
            remove_cgroup_tree(self.cpu, False)
        for p in self.children:
            p.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


def run_cycle(d):
    """Starts a cycle now (qosjailctl suspend) and waits for its summary in the kill log."""
    d.ctl("suspend")
    cycle = json.loads(d.ctl("status", "--json").stdout)["cycle"]
    return cycle, wait_for(lambda: d.summary(cycle), f"the summary of cycle {cycle}")
