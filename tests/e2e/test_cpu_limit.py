"""A server started under a cgroup CPU quota of 1 CPU sizes its intra-op threads to 1 (what a
Kubernetes CPU limit becomes; src/base/cgroup_cpu.cc), and a server outside it to the CPUs it
may use. The test makes the cgroup itself (root and a writable cgroup hierarchy needed: v2, a
child of this process's cgroup with the cpu controller enabled; else v1, a child under the cpu
controller's mount), starts `inferloop serve` in it through a wrapper that writes its own pid
into cgroup.procs and execs, reads `"threads"` from the server_listening log line, and removes
the cgroup afterwards. Skips, saying why, only when no cgroup can be made.

Recorded, not asserted: the CPU the quota-bound server burns per wall second under a saturating
load (at most about 1 CPU).

Usage: test_cpu_limit.py --inferloop build/inferloop
"""
import http.client
import json
import math
import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_harness import Server, run_tests  # noqa: E402

INFERLOOP = None
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPO = os.path.join(ROOT, "examples", "model_repository")
# Writes its own pid into the cgroup ($0/cgroup.procs), then becomes the server (same pid).
WRAPPER = ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"']


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def cgroup_mounts():
    """[(fstype, super options, root, mount point)] of the cgroup filesystems mounted here."""
    out = []
    for line in read("/proc/self/mountinfo").splitlines():
        f = line.split()
        if "-" not in f:
            continue
        i = f.index("-")
        if f[i + 1] in ("cgroup", "cgroup2"):
            out.append((f[i + 1], f[i + 3].split(","), f[3], f[4]))
    return out


def own_path(v2):
    for line in read("/proc/self/cgroup").splitlines():
        n, controllers, path = line.split(":", 2)
        if (v2 and n == "0" and not controllers) or (not v2 and "cpu" in controllers.split(",")):
            return path
    return None


def under(mount_root, mount_point, path):
    if mount_root != "/" and (path == mount_root or path.startswith(mount_root + "/")):
        path = path[len(mount_root):] or "/"
    return mount_point + ("" if path == "/" else path)


def quota_cpus(directory, v2):
    """CPUs the quota of `directory` and its ancestors (up to the mount) allows, or None."""
    best = None
    d = directory
    while True:
        if v2:
            parts = read(os.path.join(d, "cpu.max")).split()
            q, p = (parts + ["100000"])[:2] if parts else ("max", "100000")
        else:
            q, p = read(os.path.join(d, "cpu.cfs_quota_us")), read(os.path.join(d, "cpu.cfs_period_us"))
        if q and q not in ("max", "-1") and p and int(p) > 0:
            n = max(1, math.ceil(int(q) / int(p)))
            best = n if best is None else min(best, n)
        if not os.path.exists(os.path.join(os.path.dirname(d), "cgroup.procs")):
            return best
        d = os.path.dirname(d)


def make_cgroup(name):
    """Makes a 1-CPU cgroup. Returns (directory, kind, CPUs this process's own cgroup allows), or
    (None, reasons) when none could be made."""
    reasons = []
    if os.geteuid() != 0:
        reasons.append(f"not root (euid {os.geteuid()})")
    for v2 in (True, False):
        path = own_path(v2)
        kind = "v2" if v2 else "v1"
        mounts = [m for m in cgroup_mounts() if (m[0] == "cgroup2") == v2 and (v2 or "cpu" in m[1])]
        if path is None or not mounts:
            reasons.append(f"cgroup {kind}: no {'cgroup2 mount' if v2 else 'cpu controller mount'} for this process")
            continue
        parent = under(mounts[0][2], mounts[0][3], path)
        d = os.path.join(parent, name)
        try:
            if v2:
                if "cpu" not in read(os.path.join(parent, "cgroup.controllers")).split():
                    raise OSError(f"the cpu controller is not available in {parent}")
                if "cpu" not in read(os.path.join(parent, "cgroup.subtree_control")).split():
                    with open(os.path.join(parent, "cgroup.subtree_control"), "w") as f:
                        f.write("+cpu")
            os.mkdir(d)
            try:
                if v2:
                    with open(os.path.join(d, "cpu.max"), "w") as f:
                        f.write("100000 100000")
                else:
                    with open(os.path.join(d, "cpu.cfs_period_us"), "w") as f:
                        f.write("100000")
                    with open(os.path.join(d, "cpu.cfs_quota_us"), "w") as f:
                        f.write("100000")
            except OSError:
                os.rmdir(d)
                raise
            return d, kind, quota_cpus(parent, v2)
        except OSError as e:
            reasons.append(f"cgroup {kind} under {parent}: {e}")
    return None, "; ".join(reasons)


def remove_cgroup(d):
    for _ in range(50):
        try:
            os.rmdir(d)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)  # the server's exit is still being reaped
    os.rmdir(d)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def saturate(server, seconds=3.0, clients=4):
    """CPU seconds the server burns per wall second while `clients` keep tiny_cnn busy, and requests done."""
    body = json.dumps({"inputs": [{"name": "image", "datatype": "FP32", "shape": [8, 1, 28, 28],
                                   "data": [0.5] * (8 * 28 * 28)}]}).encode()
    done = [0] * clients
    end = time.perf_counter() + seconds

    def worker(i):
        c = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
        while time.perf_counter() < end:
            c.request("POST", "/v2/models/tiny_cnn/infer", body=body, headers={"Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            done[i] += r.status == 200
        c.close()
    c0, t0 = cpu_seconds(server.proc.pid), time.perf_counter()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return (cpu_seconds(server.proc.pid) - c0) / (time.perf_counter() - t0), sum(done)


def threads_logged(server):
    return int(server.find_events("server_listening")[0]["threads"])


class TestCpuLimit(unittest.TestCase):
    def test_threads_follow_the_quota(self):
        name = f"inferloop-cpu-limit-test-{os.getpid()}"
        made = make_cgroup(name)
        if made[0] is None:
            self.skipTest(f"no cgroup can be made here: {made[1]}")
        d, kind, own_cpus = made
        try:
            with Server(INFERLOOP, REPO, "--threads", "0", prefix=WRAPPER + [d]) as inside:
                self.assertEqual(read(f"/proc/{inside.proc.pid}/cgroup").count(name), 1, "the server is not in the cgroup")
                self.assertEqual(threads_logged(inside), 1, inside.log_text())
                cpu, n = saturate(inside)
                throttled = [l for l in read(os.path.join(d, "cpu.stat")).splitlines() if "throttled" in l]
                print(f"\n[cgroup {kind} {d}] threads 1; under a saturating load: {cpu:.2f} CPU per wall second "
                      f"({n} requests of 8 images in 3 s); cpu.stat {throttled}", file=sys.stderr)
                inside.terminate()
        finally:
            remove_cgroup(d)
        self.assertFalse(os.path.exists(d))
        nproc = len(os.sched_getaffinity(0))
        expected = min(nproc, own_cpus) if own_cpus else nproc
        if expected == 1:
            self.skipTest(f"this process may use 1 CPU ({nproc} in the affinity mask, own cgroup quota "
                          f"{own_cpus}): a server outside the cgroup cannot show more")
        with Server(INFERLOOP, REPO, "--threads", "0") as outside:
            self.assertEqual(threads_logged(outside), expected, outside.log_text())
            cpu, n = saturate(outside)
            print(f"[no quota] threads {expected}; under a saturating load: {cpu:.2f} CPU per wall second ({n} requests)",
                  file=sys.stderr)
            outside.terminate()

    def test_threads_flag_wins(self):
        with Server(INFERLOOP, REPO, "--threads", "3") as s:
            self.assertEqual(threads_logged(s), 3)


def set_inferloop(path):
    global INFERLOOP
    INFERLOOP = os.path.abspath(path)


if __name__ == "__main__":
    run_tests(set_inferloop)
