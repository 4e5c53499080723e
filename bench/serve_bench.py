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
raw_syscalls:sys_enter and context-switches), counted in a second, shorter wrk run right after the
timed one: perf attached to a process slows its every system call and context switch (measured on
a 2-CPU EPYC Zen 3: simple 36.7 -> 46.6 us of server CPU per request, nginx 17.7 -> 22.9 us), so
the timed run's requests/s, CPU and latency are taken with no perf attached; "n/a" without perf.
Also wrk's own CPU time per request (it runs on the same CPUs) and how busy the CPUs were (server
+ wrk CPU time over the run's wall time times the CPUs). The DLRM line adds the ratio of server +
wrk CPU per request, unbatched over batched: the throughput ratio batching would give if both
runs kept every CPU busy, which a run leaving CPUs idle (the unbatched one waits on hand-offs)
can exceed.

Rounds alternate the contenders (A, B, A, B, ...); the table shows each one's median.

`--anchor-inferloop PATH` serves the same repository with a second inferloop binary as well (a
build of another commit) and adds its `simple` as a contender, alternating with this build's in
every round, so a change to the serving path is measured side by side under the same load.
`--rest-only` leaves out the DLRM part (no bench/models needed).

    apt-get install wrk nginx-light   # the load generator and the static-file anchor (bench only)
    .venv/bin/python bench/serve_bench.py [--rounds 3] [--duration 10] [--connections 64]
    .venv/bin/python bench/serve_bench.py --rest-only --anchor-inferloop /tmp/inferloop-before --rounds 5

3. --llm MODEL.gguf (instead of 1 and 2): `inferloop serve` against llama.cpp's llama-server
   (built by scripts/setup_llama_cpp_isa.sh server: the same llama.cpp as the venv's anchor,
   native for this CPU; run as `llama-server -m MODEL --parallel 16 -c 16 x (prompt + tokens)
   -t THREADS`), both with --llm-threads threads. Each round sends --llm-streams concurrent
   streamed /v1/completions (a distinct --llm-prompt-tokens-token prompt each, new every round so
   that no prefix cache answers from the round before, the same for both servers; --llm-max-tokens
   tokens, greedy, the end-of-sequence token banned with logit_bias so that every stream runs to
   max_tokens) and reads the server-sent events as they arrive (http.client, one thread per
   stream). Reported per server, medians over the rounds (alternating): aggregate generated
   tokens/s (completion tokens of all streams / the time from sending the first request to the
   last [DONE]), time to first token (p50, p99 over the streams), time between tokens (p50, p99
   over the gaps between consecutive text-carrying events of every stream), server CPU seconds.

    .venv/bin/python bench/serve_bench.py --llm bench/models/llm/tinyllama-random-Q4_0.gguf [--rounds 3]
"""
import argparse
import http.client
import json
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
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
    def run(seconds):
        return subprocess.run(["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", script,
                               url], capture_output=True, text=True, check=True).stdout

    def completed(text):
        return int(re.search(r"(\d+) requests in", text).group(1))

    cpu_before = cpu_seconds(server_pids)
    client_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall_before = time.monotonic()
    out = run(duration)
    wall = time.monotonic() - wall_before
    client_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = cpu_seconds(server_pids) - cpu_before
    # wrk's own CPU time (a finished child's user + system time), on the same CPUs as the server.
    client = (client_after.ru_utime - client_before.ru_utime) + (client_after.ru_stime - client_before.ru_stime)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    requests = completed(out)
    # The counted run: perf attached, not timed (see the module comment).
    syscalls = switches = None
    counted = 0
    perf = perf_stat_start(server_pids)
    if perf is not None:
        counted = completed(run(min(duration, 3)))
        syscalls, switches = perf_stat_stop(perf)
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = re.search(r"Socket errors:.*", out)

    def pct(p):
        m = re.search(rf"\s{p}%\s+([\d.]+)(us|ms|s)", out)
        if not m:
            return float("nan")
        v, unit = float(m.group(1)), m.group(2)
        return v / 1000 if unit == "us" else v * 1000 if unit == "s" else v

    return {"rps": rps, "requests": requests, "cpu_us": cpu * 1e6 / requests if requests and server_pids else float("nan"),
            "client_us": client * 1e6 / requests if requests else float("nan"),
            "busy": (cpu + client) / (wall * (os.cpu_count() or 1)) if server_pids else float("nan"),
            "syscalls": syscalls / counted if counted and syscalls is not None else float("nan"),
            "switches": switches / counted if counted and switches is not None else float("nan"),
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


LLAMA_SERVER = os.path.join(ROOT, ".venv", "llama-cpp-isa", "server", "bin", "llama-server")


def stream_completion(port, body):
    """One streamed /v1/completions: {"sent", "times" (arrival of each event carrying text),
    "end", "tokens" (usage's completion_tokens, else the number of text events)}."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=900)
    sent = time.perf_counter()
    conn.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        raise RuntimeError(f"HTTP {resp.status}: {resp.read()[:500]!r}")
    times, tokens = [], None
    while True:
        line = resp.readline()
        if not line:
            break
        if not line.startswith(b"data: "):
            continue
        data = line[6:].strip()
        now = time.perf_counter()
        if data == b"[DONE]":
            break
        ev = json.loads(data)
        if ev.get("usage"):
            tokens = ev["usage"]["completion_tokens"]
        if any(c.get("text") for c in ev.get("choices") or []):
            times.append(now)
    end = time.perf_counter()
    conn.close()
    return {"sent": sent, "times": times, "end": end, "tokens": tokens if tokens is not None else len(times)}


def pctl(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] if v else float("nan")


def llm_round(port, prompts, max_tokens, eos, server_pids):
    """All prompts at once, streamed; aggregate tok/s, TTFT and time-between-tokens percentiles."""
    results = [None] * len(prompts)
    errors = []

    def one(i):
        try:
            results[i] = stream_completion(port, {"model": "llm", "prompt": prompts[i], "max_tokens": max_tokens,
                                                  "temperature": 0, "stream": True, "logit_bias": {str(eos): -100},
                                                  "stream_options": {"include_usage": True}})
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(f"stream {i}: {e}")

    cpu0 = cpu_seconds(server_pids)
    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(prompts))]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError("; ".join(errors[:3]))
    elapsed = max(r["end"] for r in results) - t0
    gaps = [b - a for r in results for a, b in zip(r["times"], r["times"][1:])]
    ttft = [r["times"][0] - r["sent"] for r in results if r["times"]]
    tokens = sum(r["tokens"] for r in results)
    return {"tok_s": tokens / elapsed, "tokens": tokens, "short": sum(r["tokens"] < max_tokens for r in results),
            "tbt_p50_ms": pctl(gaps, 50) * 1e3, "tbt_p99_ms": pctl(gaps, 99) * 1e3,
            "ttft_p50_ms": pctl(ttft, 50) * 1e3, "ttft_p99_ms": pctl(ttft, 99) * 1e3,
            "cpu_s": cpu_seconds(server_pids) - cpu0}


def start_llama_server(exe, model, streams, ctx_per_stream, threads):
    port = free_port()
    log = tempfile.TemporaryFile("w+")
    cmd = [exe, "-m", model, "--parallel", str(streams), "-c", str(streams * ctx_per_stream), "-t", str(threads),
           "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    for _ in range(1200):
        if proc.poll() is not None:
            break
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).status == 200:
                return proc, port, cmd
        except OSError:
            pass
        time.sleep(0.1)
    proc.kill()
    log.seek(0)
    raise RuntimeError("llama-server did not start: " + log.read()[-2000:])


def llm_main(a):
    """Section 3: inferloop serve against llama-server, streamed completions (module docstring)."""
    import gguf
    import random
    model = os.path.abspath(a.llm)
    if not os.path.exists(LLAMA_SERVER):
        sys.exit(f"missing {LLAMA_SERVER}: scripts/setup_llama_cpp_isa.sh server")
    r = gguf.GGUFReader(model)
    eos = int(r.fields["tokenizer.ggml.eos_token_id"].parts[-1][0])
    n_vocab = len(r.fields["tokenizer.ggml.tokens"].data)
    rng = random.Random(0)

    def new_prompts(n):
        # Fresh prompts for every round (the same for both servers within it): neither server's
        # prefix cache can answer a round from the one before.
        return [[1] + [rng.randrange(300, n_vocab - 16) for _ in range(a.llm_prompt_tokens - 1)] for _ in range(n)]
    ctx_per_stream = a.llm_prompt_tokens + a.llm_max_tokens
    work = tempfile.mkdtemp(prefix="inferloop_llm_serve_bench_")
    srv = llama = None
    try:
        os.makedirs(os.path.join(work, "llm", "1"))
        os.symlink(model, os.path.join(work, "llm", "1", "model.gguf"))
        srv = Server(a.inferloop, work, "--grpc-port", "-1", "--threads", str(a.llm_threads), timeout=600)
        llama, llama_port, llama_cmd = start_llama_server(LLAMA_SERVER, model, a.llm_streams, ctx_per_stream,
                                                          a.llm_threads)
        contenders = {"inferloop serve": (srv.http_port, [srv.proc.pid]),
                      "llama-server": (llama_port, [llama.pid])}
        warm = new_prompts(1)
        for port, pids in contenders.values():  # warm-up: one short stream each, not counted
            llm_round(port, warm, 4, eos, pids)
        results = {k: [] for k in contenders}
        for rnd in range(a.rounds):
            prompts = new_prompts(a.llm_streams)
            for name, (port, pids) in contenders.items():
                results[name].append(llm_round(port, prompts, a.llm_max_tokens, eos, pids))
                x = results[name][-1]
                print(f"round {rnd + 1}/{a.rounds} {name}: {x['tok_s']:.1f} tok/s ({x['tokens']} tokens, "
                      f"{x['short']} streams short), TBT p50 {x['tbt_p50_ms']:.0f} ms p99 {x['tbt_p99_ms']:.0f} ms, "
                      f"TTFT p50 {x['ttft_p50_ms']:.0f} ms p99 {x['ttft_p99_ms']:.0f} ms, "
                      f"server CPU {x['cpu_s']:.1f} s", flush=True)
        print(f"\n{a.llm_streams} concurrent streamed /v1/completions, {a.llm_prompt_tokens}-token prompts, "
              f"{a.llm_max_tokens} tokens each, greedy; {a.rounds} alternating rounds, medians; "
              f"{os.cpu_count()} CPUs; model {os.path.basename(model)}")
        print(f"inferloop: {' '.join(srv.cmd)}")
        print(f"llama.cpp: {' '.join(llama_cmd)}\n")
        print("| server | aggregate tok/s | TBT p50 ms | TBT p99 ms | TTFT p50 ms | TTFT p99 ms | server CPU s |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, rs in results.items():
            med = {k: statistics.median(x[k] for x in rs) for k in rs[0]}
            print(f"| {name} | {med['tok_s']:.1f} | {med['tbt_p50_ms']:.0f} | {med['tbt_p99_ms']:.0f} | "
                  f"{med['ttft_p50_ms']:.0f} | {med['ttft_p99_ms']:.0f} | {med['cpu_s']:.1f} |")
        ti = statistics.median(x["tok_s"] for x in results["inferloop serve"])
        tl = statistics.median(x["tok_s"] for x in results["llama-server"])
        print(f"\naggregate tok/s inferloop serve / llama-server: {ti / tl:.2f}x (aim >= 1.5x)")
    finally:
        if llama is not None:
            os.killpg(llama.pid, signal.SIGTERM)
            llama.wait(60)
        if srv is not None:
            srv.terminate()
            srv.__exit__()
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--inferloop", default=os.path.join(ROOT, "build", "inferloop"))
    ap.add_argument("--batch-delay-us", type=int, default=0, help="dlrm_batched's max_queue_delay_microseconds")
    ap.add_argument("--anchor-inferloop", help="another inferloop binary whose `simple` alternates with this one's")
    ap.add_argument("--rest-only", action="store_true", help="only simple (and the anchor's) and nginx: no DLRM")
    ap.add_argument("--llm", metavar="MODEL.gguf", help="only section 3: inferloop serve against llama-server")
    ap.add_argument("--llm-streams", type=int, default=16)
    ap.add_argument("--llm-prompt-tokens", type=int, default=32)
    ap.add_argument("--llm-max-tokens", type=int, default=64)
    ap.add_argument("--llm-threads", type=int, default=2)
    a = ap.parse_args()
    if a.llm:
        return llm_main(a)
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
              f"{os.cpu_count()} CPUs ({cpu}); server --threads 1, 2 instances per DLRM model\n")
        def fig(name, key, digits):
            v = med(name, key)
            return "n/a" if v != v else f"{v:.{digits}f}"  # NaN: not measured

        print("| contender | req/s | server CPU us/request | wrk CPU us/request | CPUs busy | syscalls/request | "
              "context switches/request | p50 ms | p99 ms | non-2xx |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for name in results:
            print(f"| {name} | {med(name, 'rps'):.0f} | {med(name, 'cpu_us'):.1f} | {med(name, 'client_us'):.1f} | "
                  f"{100 * med(name, 'busy'):.0f}% | {fig(name, 'syscalls', 2)} | "
                  f"{fig(name, 'switches', 2)} | {med(name, 'p50_ms'):.2f} | {med(name, 'p99_ms'):.2f} | "
                  f"{sum(x['non2xx'] for x in results[name])} |")
        if dlrm_models:
            def total(name):
                return med(name, "cpu_us") + med(name, "client_us")
            print(f"\nDLRM dynamic batching on / off: {med('dlrm_batched', 'rps') / med('dlrm_unbatched', 'rps'):.2f}x "
                  f"throughput (aim >= 3x); server + wrk CPU per request {total('dlrm_batched'):.1f} / "
                  f"{total('dlrm_unbatched'):.1f} us: {total('dlrm_unbatched') / total('dlrm_batched'):.2f}x, the "
                  f"ratio with both keeping every CPU busy")
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
