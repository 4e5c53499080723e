"""Side-by-side server benchmarks for `inferloop serve`, driven by wrk (Debian), in one run:

1. Dynamic batching: the zoo's DLRM-like recommender (bench/models/dlrm, made by make_zoo.py)
   served twice from one repository, `dlrm_batched` (dynamic_batching, max_batch_size 64) and
   `dlrm_unbatched` (no dynamic_batching: every request runs alone), 64 concurrent clients each
   sending batch-1 requests. Reports requests/s and latency for both and their ratio.
2. REST overhead: the trivial `simple` model (int32 add/sub) against nginx (Debian: 2 workers,
   sendfile, open_file_cache, no access log) serving a static file of the same size as simple's
   JSON response, same wrk settings.

Next to requests/s, the server CPU time per request: the utime + stime the contender's processes
(every thread; nginx's master and workers) spent during the wrk run, from /proc/PID/stat, divided
by the requests wrk completed. Unlike requests/s, that figure barely moves when other processes
share the CPUs. With `perf` installed (linux-perf; run as root or with perf_event_paranoid <= 1), the
system calls and context switches the contender's processes made per request too (perf stat's
raw_syscalls:sys_enter and context-switches over the wrk run); "n/a" without it.

Rounds alternate the contenders (A, B, A, B, ...); the table shows each one's median.

`--anchor-inferloop PATH` serves the same repository with a second inferloop binary as well (a
build of another commit) and adds its `simple` as a contender, alternating with this build's in
every round, so a change to the serving path is measured side by side under the same load.
`--rest-only` leaves out the DLRM part (no bench/models needed).

    apt-get install wrk nginx-light   # the load generator and the static-file anchor (bench only)
    .venv/bin/python bench/serve_bench.py [--rounds 3] [--duration 10] [--connections 64]
    .venv/bin/python bench/serve_bench.py --rest-only --anchor-inferloop /tmp/inferloop-before --rounds 5
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from serve_harness import Server  # noqa: E402

DLRM_TABLE_ROWS = (100000, 50000, 100000, 20000, 80000, 10000, 60000, 5000)


def dlrm_config(name, batching, delay_us):
    cfg = f'name: "{name}"\nmax_batch_size: 64\n'
    cfg += 'instance_group [ { count: 2 } ]\n'
    if batching:
        cfg += f"dynamic_batching {{ max_queue_delay_microseconds: {delay_us} }}\n"
    return cfg


def simple_body():
    return json.dumps({"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": list(range(16))},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16}]})


def dlrm_body(seed=0):
    import random
    r = random.Random(seed)
    return json.dumps({"inputs": [
        {"name": "dense", "datatype": "FP32", "shape": [1, 13], "data": [round(r.uniform(-1, 1), 4) for _ in range(13)]},
        {"name": "sparse", "datatype": "INT64", "shape": [1, 8], "data": [r.randrange(n) for n in DLRM_TABLE_ROWS]}]})


def cpu_seconds(pids):
    """utime + stime of the processes `pids` (all their threads), in seconds."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / os.sysconf("SC_CLK_TCK")


def group_pids(pgid):
    """The processes of process group `pgid` (nginx's master and workers)."""
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if os.getpgid(int(d)) == pgid:
                    pids.append(int(d))
            except OSError:
                pass
    return pids


def wrk(url, body, connections, duration, workdir, threads=2, server_pids=()):
    script = os.path.join(workdir, "req.lua")
    with open(script, "w") as f:
        if body is None:
            f.write('wrk.method = "GET"\n')
        else:
            f.write('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n')
            f.write("wrk.body = " + json.dumps(body) + "\n")
    perf = perf_stat_start(server_pids)
    cpu_before = cpu_seconds(server_pids)
    out = subprocess.run(["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}s", "--latency", "-s", script, url],
                         capture_output=True, text=True, check=True).stdout
    cpu = cpu_seconds(server_pids) - cpu_before
    syscalls, switches = perf_stat_stop(perf)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = re.search(r"Socket errors:.*", out)

    def pct(p):
        m = re.search(rf"\s{p}%\s+([\d.]+)(us|ms|s)", out)
        if not m:
            return float("nan")
        v, unit = float(m.group(1)), m.group(2)
        return v / 1000 if unit == "us" else v * 1000 if unit == "s" else v

    return {"rps": rps, "requests": requests, "cpu_us": cpu * 1e6 / requests if requests and server_pids else float("nan"),
            "syscalls": syscalls / requests if requests and syscalls is not None else float("nan"),
            "switches": switches / requests if requests and switches is not None else float("nan"),
            "p50_ms": pct(50), "p99_ms": pct(99), "non2xx": int(non2xx.group(1)) if non2xx else 0,
            "socket_errors": errors.group(0) if errors else ""}


def perf_stat_start(pids):
    """perf stat counting system calls and context switches of `pids`, or None (no perf, no pids)."""
    if not pids or shutil.which("perf") is None:
        return None
    proc = subprocess.Popen(["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter,context-switches",
                             "-p", ",".join(str(p) for p in pids)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(0.2)  # let it attach before the load starts
    return proc


def perf_stat_stop(proc):
    """(system calls, context switches) counted by perf_stat_start's process; None where unknown."""
    if proc is None:
        return None, None
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=30)[1]
    counts = {}
    for line in err.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[0].isdigit():
            counts[fields[2]] = int(fields[0])
    return counts.get("raw_syscalls:sys_enter"), counts.get("context-switches")


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(workdir, body_size, port):
    root = os.path.join(workdir, "www")
    os.makedirs(root, exist_ok=True)
    for d in (workdir, root):  # nginx's workers may run as another user (www-data when started as root)
        os.chmod(d, 0o755)
    with open(os.path.join(root, "response.json"), "w") as f:
        f.write("x" * body_size)
    os.chmod(os.path.join(root, "response.json"), 0o644)
    conf = os.path.join(workdir, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""worker_processes 2;
daemon off;
pid {workdir}/nginx.pid;
error_log {workdir}/nginx_error.log;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  sendfile on;
  tcp_nopush on;
  open_file_cache max=16 inactive=60s;
  open_file_cache_valid 60s;
  keepalive_requests 1000000;
  server {{
    listen 127.0.0.1:{port};
    location / {{ root {root}; default_type application/json; }}
  }}
}}
""")
    proc = subprocess.Popen(["nginx", "-c", conf, "-p", workdir], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/response.json", timeout=1).read()
            return proc
        except OSError:
            time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    raise RuntimeError("nginx did not start: " + open(os.path.join(workdir, "nginx_error.log")).read()[-2000:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--inferloop", default=os.path.join(ROOT, "build", "inferloop"))
    ap.add_argument("--batch-delay-us", type=int, default=0, help="dlrm_batched's max_queue_delay_microseconds")
    ap.add_argument("--anchor-inferloop", help="another inferloop binary whose `simple` alternates with this one's")
    ap.add_argument("--rest-only", action="store_true", help="only simple (and the anchor's) and nginx: no DLRM")
    a = ap.parse_args()
    dlrm = os.path.join(ROOT, "bench", "models", "dlrm", "model.onnx")
    if not a.rest_only and not os.path.exists(dlrm):
        sys.exit(f"missing {dlrm}: run /usr/bin/python3 bench/make_zoo.py first (or --rest-only)")
    dlrm_models = () if a.rest_only else ("dlrm_batched", "dlrm_unbatched")
    work = tempfile.mkdtemp(prefix="inferloop_serve_bench_")
    try:
        repo = os.path.join(work, "repo")
        for name in dlrm_models:
            os.makedirs(os.path.join(repo, name, "1"))
            os.symlink(dlrm, os.path.join(repo, name, "1", "model.onnx"))
            with open(os.path.join(repo, name, "config.pbtxt"), "w") as f:
                f.write(dlrm_config(name, name == "dlrm_batched", a.batch_delay_us))
        shutil.copytree(os.path.join(ROOT, "examples", "model_repository", "simple"), os.path.join(repo, "simple"))
        srv = Server(a.inferloop, repo, "--grpc-port", "-1", "--max-inflight", "4096")
        base = f"http://127.0.0.1:{srv.http_port}"
        anchor = Server(a.anchor_inferloop, repo, "--grpc-port", "-1", "--max-inflight", "4096") if a.anchor_inferloop else None
        # The size of simple's response, for nginx's static file.
        req = urllib.request.Request(f"{base}/v2/models/simple/infer", data=simple_body().encode(),
                                     headers={"Content-Type": "application/json"})
        simple_response_size = len(urllib.request.urlopen(req).read())
        nginx_port = free_port()
        nginx = start_nginx(work, simple_response_size, nginx_port)
        results = {k: [] for k in dlrm_models + ("simple",) + (("simple (anchor)",) if anchor else ()) + ("nginx",)}
        body = dlrm_body()
        server = [srv.proc.pid]
        nginx_pids = group_pids(nginx.pid)
        for r in range(a.rounds):
            for name in dlrm_models:
                results[name].append(wrk(f"{base}/v2/models/{name}/infer", body, a.connections, a.duration, work,
                                         server_pids=server))
            # With an anchor, who goes first alternates from round to round too.
            simples = [("simple", srv)] + ([("simple (anchor)", anchor)] if anchor else [])
            for name, s in (simples if r % 2 == 0 else simples[::-1]):
                results[name].append(wrk(f"http://127.0.0.1:{s.http_port}/v2/models/simple/infer", simple_body(),
                                         a.connections, a.duration, work, server_pids=[s.proc.pid]))
            results["nginx"].append(wrk(f"http://127.0.0.1:{nginx_port}/response.json", None, a.connections, a.duration,
                                        work, server_pids=nginx_pids))
            print(f"round {r + 1}/{a.rounds}: " + ", ".join(f"{k} {v[-1]['rps']:.0f} req/s {v[-1]['cpu_us']:.1f} us CPU "
                                                            f"{v[-1]['syscalls']:.2f} syscalls" for k, v in results.items()),
                  flush=True)
        nginx.send_signal(signal.SIGQUIT)
        nginx.wait(30)
        rc = srv.terminate()
        srv.__exit__()
        if anchor:
            anchor.terminate()
            anchor.__exit__()

        def med(name, key):
            return statistics.median(x[key] for x in results[name])

        cpu = ""
        try:
            cpu = [ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")][0]
        except (OSError, IndexError):
            pass
        print(f"\nwrk -t2 -c{a.connections} -d{a.duration}s, {a.rounds} alternating rounds, medians; "
              f"{os.cpu_count()} CPUs ({cpu}); server --threads 1, 2 instances per model\n")
        def fig(name, key, digits):
            v = med(name, key)
            return "n/a" if v != v else f"{v:.{digits}f}"  # NaN: not measured

        print("| contender | req/s | server CPU us/request | syscalls/request | context switches/request | p50 ms | "
              "p99 ms | non-2xx |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for name in results:
            print(f"| {name} | {med(name, 'rps'):.0f} | {med(name, 'cpu_us'):.1f} | {fig(name, 'syscalls', 2)} | "
                  f"{fig(name, 'switches', 2)} | {med(name, 'p50_ms'):.2f} | {med(name, 'p99_ms'):.2f} | "
                  f"{sum(x['non2xx'] for x in results[name])} |")
        if dlrm_models:
            print(f"\nDLRM dynamic batching on / off: {med('dlrm_batched', 'rps') / med('dlrm_unbatched', 'rps'):.2f}x "
                  f"throughput (aim >= 3x)")
        if anchor:
            print(f"simple, this build / the anchor ({a.anchor_inferloop}): server CPU per request "
                  f"{med('simple', 'cpu_us'):.1f} / {med('simple (anchor)', 'cpu_us'):.1f} us = "
                  f"{med('simple', 'cpu_us') / med('simple (anchor)', 'cpu_us'):.3f}; req/s "
                  f"{med('simple', 'rps') / med('simple (anchor)', 'rps'):.3f}x")
        print(f"simple REST / nginx static ({simple_response_size} B): "
              f"{med('simple', 'rps') / med('nginx', 'rps'):.2f} (aim >= 0.8); server CPU per request "
              f"{med('simple', 'cpu_us'):.1f} us against nginx's {med('nginx', 'cpu_us'):.1f} us")
        print(f"server exit code {rc}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
