"""Which server signal should a HorizontalPodAutoscaler scale inferloop on? (issue 17)

1. Records one replica (one `inferloop serve`, shaped as a 1-CPU pod: --threads 1 and one model
   instance, so its CPU limit is 1 CPU) under an open-loop Poisson load ramp from 0.25x to 3x its
   measured capacity and back, scraping /metrics every second: inferloop_inflight_requests, the
   sum of inferloop_queue_depth, and the rate of process_cpu_seconds_total (CPU utilisation of the
   1-CPU limit), with the offered rate. The model is tests/e2e/make_test_repository.py's "slow"
   (N rounds of Tanh(X @ W), N chosen so one request costs ~--cost-ms of CPU) behind a bounded
   queue (max_queue_size 32: a full pod sheds load, as a real one must).
2. Replays the recorded signals through Kubernetes' HPA algorithm (bench/hpa_replay.py, with the
   min/max, target and behavior of deploy/kubernetes/base/hpa.yaml, or the contract's numbers when
   that file is absent) against a fleet load profile of the same shape, and plots the replica count
   each signal would choose (docs/autoscale_signal.svg); prints when each scales.

Model of the fleet (how the per-pod value depends on the replica count N): the fleet's offered
load lambda(t) splits evenly over N pods, and a pod offered r req/s shows the signal value g(r)
that the recorded replica showed in steady state when offered r (the mean over the second half of
each ramp step, linear between the steps, 0 at 0 req/s). So the per-pod value an HPA reads is
g(lambda(t) / N). For in-flight requests this is Little's law per pod (L = r * W(r)); for CPU it
saturates at 100% of the limit once r reaches one pod's capacity, so a CPU HPA with target T
never sees more than 100%/T and grows by at most that factor per sync, however deep the overload.
Not modelled: pod start-up time (a new pod serves from the sync after it is created), uneven
balancing, and backlog carried between steps (a bounded queue keeps it small).

Usage:
    .venv/bin/python bench/autoscale_signal.py [--inferloop build/inferloop] [--svg docs/autoscale_signal.svg]
                                               [--fast] [--json out.json]
--fast (the e2e test): shorter steps, a three-phase ramp (low, high, low).
"""
import argparse
import http.client
import json
import math
import os
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "adaptive"))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import hpa_replay  # noqa: E402
from load_step import OpenLoop  # noqa: E402
from make_test_repository import save, slow_model  # noqa: E402
from serve_harness import Server, metric_sum, metric_value, metrics  # noqa: E402
from svg_chart import SvgChart, stack_svg  # noqa: E402

QUEUE_LIMIT = 32
CPU_TARGET = 0.70  # a CPU HPA's averageUtilization (a common choice; the contract's HPA has none)
MODEL_CONFIG = f"""name: "slow"
max_batch_size: 1
input [
  {{ name: "X" data_type: TYPE_FP32 dims: [ 16 ] }},
  {{ name: "N" data_type: TYPE_INT64 dims: [ 1 ] }}
]
output [ {{ name: "Y" data_type: TYPE_FP32 dims: [ 16 ] }} ]
dynamic_batching {{ default_queue_policy {{ max_queue_size: {QUEUE_LIMIT} }} }}
instance_group [ {{ count: 1, kind: KIND_CPU }} ]
"""
# Ramp (multiples of one pod's capacity). Fast: low, high, low (the e2e test's phases).
FULL_RAMP = [0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 2.0, 1.0, 0.5, 0.25]
FAST_RAMP = [0.3, 1.5, 0.3]
# The fleet's load in cluster time: multiples of one pod's capacity, 60 s each (2x the ramp:
# a fleet at its 2-replica minimum that sees 6 pods' worth of load at the peak).
# Two fleet load profiles (x one pod's capacity, FLEET_STEP_S each): a gradual ramp, and a sudden
# step (a traffic spike), where how far one sync can move the replica count matters most.
PROFILES = {"ramp": [0.5, 1.0, 2.0, 4.0, 6.0, 6.0, 4.0, 2.0, 1.0, 0.5, 0.5, 0.5, 0.5],
            "step": [0.5, 0.5, 6.0, 6.0, 6.0, 6.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]}
FLEET_STEP_S = 60


def make_repository(root):
    save(slow_model(), os.path.join(root, "slow", "1", "model.onnx"))
    with open(os.path.join(root, "slow", "config.pbtxt"), "w") as f:
        f.write(MODEL_CONFIG)


def request_body(rounds):
    body = {"inputs": [{"name": "X", "datatype": "FP32", "shape": [1, 16], "data": [0.5] * 16},
                       {"name": "N", "datatype": "INT64", "shape": [1, 1], "data": [int(rounds)]}]}
    return json.dumps(body).encode(), {"Content-Type": "application/json"}


def one_request(conn, body, headers):
    conn.request("POST", "/v2/models/slow/infer", body=body, headers=headers)
    r = conn.getresponse()
    r.read()
    return r.status


def server_cpu_seconds(metrics_port):
    return metric_value(metrics(metrics_port), "process_cpu_seconds_total")


def calibrate_rounds(port, metrics_port, cost_ms, requests=20):
    """The loop count N that makes one request cost about cost_ms of the server's CPU, measured
    alone from its process_cpu_seconds_total (CPU time, not wall time: on a machine shared with
    other work a wall-time calibration makes requests too cheap, and the "over capacity" phase then
    does not saturate the server)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    rounds = 2000
    for _ in range(3):
        body, headers = request_body(rounds)
        one_request(conn, body, headers)
        cpu0 = server_cpu_seconds(metrics_port)
        for _ in range(requests):
            if one_request(conn, body, headers) != 200:
                raise RuntimeError("calibration request failed")
        ms = max((server_cpu_seconds(metrics_port) - cpu0) / requests * 1000, 0.01)
        rounds = max(10, int(rounds * cost_ms / ms))
    conn.close()
    return rounds


def closed_loop_capacity(port, metrics_port, body, headers, clients=4, seconds=3.0):
    """Requests per second one replica can complete: the larger of the rate measured with `clients`
    requests always outstanding and one CPU over the server's CPU seconds per request in that run
    (what the replica completes when nothing else competes for the CPU; the measured rate is lower
    on a machine shared with other work)."""
    done = [0] * clients
    end = time.perf_counter() + seconds

    def worker(i):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        while time.perf_counter() < end:
            if one_request(conn, body, headers) == 200:
                done[i] += 1
        conn.close()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    cpu0 = server_cpu_seconds(metrics_port)
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    measured = sum(done) / (time.perf_counter() - t0)
    cpu = server_cpu_seconds(metrics_port) - cpu0
    return max(measured, sum(done) / cpu if cpu > 0 else 0.0)


class Sampler(threading.Thread):
    """Scrapes /metrics every second: (t, in-flight, queue depth sum, process CPU seconds)."""

    def __init__(self, port, t0):
        super().__init__(daemon=True)
        self.port, self.t0, self.samples, self.stop = port, t0, [], threading.Event()

    def run(self):
        while not self.stop.is_set():
            text = metrics(self.port)
            queue = metric_sum(text, "inferloop_queue_depth")
            self.samples.append((time.perf_counter() - self.t0, metric_value(text, "inferloop_inflight_requests"),
                                 queue, metric_value(text, "process_cpu_seconds_total")))
            self.stop.wait(1.0)


def record(inferloop, workdir, fast=False, cost_ms=None):
    """Runs the ramp on one replica. Returns the recording (a JSON-able dict)."""
    cost_ms = cost_ms or (10.0 if fast else 15.0)
    step_s = 10.0 if fast else 20.0
    ramp = FAST_RAMP if fast else FULL_RAMP
    make_repository(os.path.join(workdir, "repo"))
    with Server(inferloop, os.path.join(workdir, "repo"), "--threads", "1") as server:
        rounds = calibrate_rounds(server.http_port, server.metrics_port, cost_ms)
        body, headers = request_body(rounds)
        capacity = closed_loop_capacity(server.http_port, server.metrics_port, body, headers,
                                        seconds=2.0 if fast else 4.0)
        steps = [(step_s * (2 if fast and i == len(ramp) - 1 else 1), m * capacity) for i, m in enumerate(ramp)]
        loop = OpenLoop(server.http_port, "/v2/models/slow/infer", workers=QUEUE_LIMIT * 3, body=body, headers=headers)
        t0 = time.perf_counter()
        sampler = Sampler(server.metrics_port, t0)
        sampler.start()
        loop_t0 = loop.run(steps)
        sampler.stop.set()
        sampler.join()
        server.terminate()
    offset = loop_t0 - t0  # the sampler's clock started this much earlier than the schedule's
    samples = [(t - offset, inf, q, cpu) for t, inf, q, cpu in sampler.samples]
    return {"cost_ms": cost_ms, "rounds": rounds, "capacity_rps": capacity, "ramp": ramp,
            "steps": [{"seconds": s, "rate": r} for s, r in steps],
            "samples": samples, "requests": loop.results}


def phases(rec):
    """Per ramp step: offered rate, and over its second half the means of the signals and the
    client-side throughput X (req/s answered 200) and mean latency W (s) of those requests."""
    out, t = [], 0.0
    samples = rec["samples"]
    for i, st in enumerate(rec["steps"]):
        a, b = t + st["seconds"] / 2, t + st["seconds"]
        sm = [s for s in samples if a <= s[0] < b]
        cpu = [(s2[3] - s1[3]) / (s2[0] - s1[0]) for s1, s2 in zip(samples, samples[1:]) if a <= s1[0] and s2[0] < b]
        ok = [(sched, lat) for sched, lat, good in rec["requests"] if good and a <= sched < b]
        failed = sum(1 for sched, _, good in rec["requests"] if not good and a <= sched < b)
        mean = lambda v: sum(v) / len(v) if v else float("nan")  # noqa: E731
        out.append({"step": i, "multiple": rec["ramp"][i], "rate": st["rate"],
                    "inflight": mean([s[1] for s in sm]), "queue": mean([s[2] for s in sm]), "cpu": mean(cpu),
                    "X": len(ok) / (b - a), "W": mean([lat / 1000 for _, lat in ok]), "failed": failed,
                    "samples": len(sm)})
        t = b
    return out


def signal_curves(ph):
    """g(r) per signal: sorted (rate, mean value) points, (0, 0) first; steps at the same rate averaged."""
    curves = {}
    for key in ("inflight", "queue", "cpu"):
        by_rate = {}
        for p in ph:
            if not math.isnan(p[key]):
                by_rate.setdefault(round(p["rate"], 6), []).append(p[key])
        curves[key] = [(0.0, 0.0)] + sorted((r, sum(v) / len(v)) for r, v in by_rate.items())
    return curves


def interpolate(curve, r):
    if r <= curve[0][0]:
        return curve[0][1]
    for (r1, v1), (r2, v2) in zip(curve, curve[1:]):
        if r <= r2:
            return v1 + (v2 - v1) * (r - r1) / ((r2 - r1) or 1)
    return curve[-1][1]


def fleet_load(t, capacity, profile):
    i = min(int(t // FLEET_STEP_S), len(profile) - 1)
    return profile[i] * capacity


def needed_replicas(t, capacity, hpa, profile):
    """The fewest pods that keep each below CPU_TARGET of its capacity (clamped to min/max)."""
    n = math.ceil(fleet_load(t, capacity, profile) / (CPU_TARGET * capacity) - 1e-9)
    return max(hpa["minReplicas"], min(hpa["maxReplicas"], n))


def replay_signals(rec, hpa, profile):
    """{signal: [(t, replicas, value, recommendation)]} over the fleet profile."""
    ph = phases(rec)
    curves = signal_curves(ph)
    cap = rec["capacity_rps"]
    duration = FLEET_STEP_S * len(profile)
    targets = {"inflight": hpa["target"], "queue": max(hpa["target"] - 1, 0.5), "cpu": CPU_TARGET}
    out = {}
    for key, target in targets.items():
        h = dict(hpa, target=target)
        out[key] = hpa_replay.replay(lambda t, n, c=curves[key]: interpolate(c, fleet_load(t, cap, profile) / n), h,
                                     duration)
    return out, targets, curves, ph


def timing_table(runs, rec, hpa, profile):
    """Per signal: seconds from the load needing more than minReplicas to the first scale-up, from the
    need reaching its peak to the count reaching it, the overshoot, and from the need falling back
    to minReplicas to the count doing so."""
    cap = rec["capacity_rps"]
    duration = FLEET_STEP_S * len(profile)
    ts = [t for t, *_ in runs["inflight"]]
    need = [needed_replicas(t, cap, hpa, profile) for t in ts]
    peak = max(need)
    t_rise = next((t for t, n in zip(ts, need) if n > hpa["minReplicas"]), None)
    t_peak = next(t for t, n in zip(ts, need) if n == peak)
    i_peak = ts.index(t_peak)
    t_fall = next((t for t, n in zip(ts[i_peak:], need[i_peak:]) if n == hpa["minReplicas"]), None)
    rows = {}
    for key, run in runs.items():
        first_up = next((t for t, r, *_ in run if r > hpa["minReplicas"]), None)
        reach = next((t for t, r, *_ in run if t >= t_peak and r >= peak), None)
        back = next((t for t, r, *_ in run if t_fall is not None and t >= t_fall and r == hpa["minReplicas"]), None)
        rows[key] = {"first_scale_up_s": None if first_up is None or t_rise is None else first_up - t_rise,
                     "reach_needed_s": None if reach is None else reach - t_peak,
                     "max_replicas": max(r for _, r, *_ in run), "overshoot": max(r for _, r, *_ in run) - peak,
                     "scale_down_s": None if back is None else back - t_fall}
    return rows, {"needed_peak": peak, "duration_s": duration, "t_rise": t_rise, "t_peak": t_peak, "t_fall": t_fall}


COLORS = {"inflight": "#c44e52", "queue": "#8172b2", "cpu": "#4c72b0", "load": "#e69f00", "need": "#333"}
NAMES = {"inflight": "inferloop_inflight_requests", "queue": "inferloop_queue_depth (sum)", "cpu": "CPU utilisation"}


def plot(path, rec, replays, targets, hpa):
    """replays: {profile name: (profile, runs, info)}; one file, the recording over one fleet chart
    per profile."""
    cap = rec["capacity_rps"]
    rec_dur = sum(s["seconds"] for s in rec["steps"])
    top = SvgChart(f"One replica under a load ramp (capacity {cap:.0f} req/s, {rec['cost_ms']:.0f} ms/request, 1-CPU pod)", rec_dur)
    p = top.panel("recorded per-pod signals; offered load as a multiple of capacity x10", 0, QUEUE_LIMIT + 4,
                  [0, 8, 16, 24, 32])
    t, pts = 0.0, []
    for s in rec["steps"]:
        pts += [(t, 10 * s["rate"] / cap), (t + s["seconds"], 10 * s["rate"] / cap)]
        t += s["seconds"]
    p.line(pts, COLORS["load"], "offered load (x capacity) x10", dash=True)
    sm = rec["samples"]
    p.line([(s[0], s[1]) for s in sm], COLORS["inflight"], "in-flight")
    p.line([(s[0], s[2]) for s in sm], COLORS["queue"], "queue depth")
    p.line([(b[0], 10 * (b[3] - a[3]) / (b[0] - a[0])) for a, b in zip(sm, sm[1:])], COLORS["cpu"], "CPU (of 1-CPU limit) x10")
    charts = [top]
    for name, (profile, runs, info) in replays.items():
        fleet = SvgChart("", info["duration_s"])
        q = fleet.panel(f"HPA replay, fleet load {name} (min {hpa['minReplicas']}, max {hpa['maxReplicas']}, sync 15 s, "
                        f"tolerance 0.1, scale-down window {hpa['scaleDown']['stabilizationWindowSeconds']} s): "
                        "replicas chosen", 0, hpa["maxReplicas"] + 1, list(range(0, hpa["maxReplicas"] + 1, 2)))
        lt = [i * FLEET_STEP_S for i in range(len(profile))]
        q.steps([(t, profile[i]) for i, t in enumerate(lt)], COLORS["load"], "fleet load (x one pod's capacity)",
                dash=True, until=info["duration_s"])
        q.steps([(t, needed_replicas(t, cap, hpa, profile)) for t in lt], COLORS["need"],
                f"needed (each pod < {CPU_TARGET:.0%})", width=1, until=info["duration_s"])
        for key, run in runs.items():
            label = f"{NAMES[key]} (target {targets[key]:g}{'' if key != 'cpu' else ' = ' + format(targets[key], '.0%')})"
            q.steps([(t, r) for t, r, *_ in run], COLORS[key], label, until=info["duration_s"])
        charts.append(fleet)
    with open(path, "w") as f:
        f.write(stack_svg(charts))


def recording_report(rec, ph, targets, hpa_source):
    fmt = lambda v: "never" if v is None else f"{v:.0f} s"  # noqa: E731
    lines = [f"one replica: {rec['cost_ms']:.0f} ms/request (N={rec['rounds']}), capacity {rec['capacity_rps']:.1f} req/s "
             f"(closed loop with 4 clients, or one CPU over the CPU per request if more); queue limit {QUEUE_LIMIT}",
             "step  offered(x cap)  req/s   in-flight  queue  CPU    X(req/s)  W(ms)   X*W   failed"]
    for p in ph:
        lines.append(f"{p['step']:4d}  {p['multiple']:14.2f}  {p['rate']:6.1f}  {p['inflight']:9.2f}  {p['queue']:5.2f}  "
                     f"{p['cpu']:5.0%}  {p['X']:8.1f}  {p['W'] * 1000:6.1f}  {p['X'] * p['W']:5.2f}  {p['failed']}")
    lines.append(f"HPA settings from {hpa_source}; targets: " + ", ".join(f"{NAMES[k]} {v:g}" for k, v in targets.items()))
    return "\n".join(lines)


def replay_report(name, profile, rows, info):
    fmt = lambda v: "never" if v is None else f"{v:.0f} s"  # noqa: E731
    lines = [f"fleet profile {name} (x one pod's capacity, {FLEET_STEP_S} s each): {profile}; needed peak "
             f"{info['needed_peak']} replicas"]
    lines.append("signal                          first scale-up  reach needed  max  overshoot  back to min")
    for k, r in rows.items():
        lines.append(f"{NAMES[k]:30s}  {fmt(r['first_scale_up_s']):>14s}  {fmt(r['reach_needed_s']):>12s}  "
                     f"{r['max_replicas']:3d}  {r['overshoot']:+9d}  {fmt(r['scale_down_s']):>11s}")
    cpu = rows["cpu"]
    for k in ("inflight", "queue"):
        r = rows[k]
        if r["reach_needed_s"] is not None and cpu["reach_needed_s"] is not None:
            lines.append(f"{NAMES[k]} reaches the needed count {cpu['reach_needed_s'] - r['reach_needed_s']:+.0f} s "
                         f"before CPU; first scale-up {(cpu['first_scale_up_s'] or 0) - (r['first_scale_up_s'] or 0):+.0f} s before CPU")
        elif r["reach_needed_s"] is not None:
            lines.append(f"{NAMES[k]} reaches the needed count after {r['reach_needed_s']:.0f} s; CPU never does")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inferloop", default=os.path.join(ROOT, "build", "inferloop"))
    ap.add_argument("--svg", default=os.path.join(ROOT, "docs", "autoscale_signal.svg"))
    ap.add_argument("--hpa", default=os.path.join(ROOT, "deploy", "kubernetes", "base", "hpa.yaml"))
    ap.add_argument("--fast", action="store_true")
    ap.add_argument("--cost-ms", type=float, default=None)
    ap.add_argument("--json", default=None, help="write the recording, curves and replays here")
    ap.add_argument("--replay", default=None, help="replay the recording of an earlier --json instead of measuring")
    a = ap.parse_args()
    hpa, source = hpa_replay.load_hpa(a.hpa)
    if a.replay:
        with open(a.replay) as f:
            rec = json.load(f)["recording"]
    else:
        with tempfile.TemporaryDirectory() as d:
            rec = record(a.inferloop, d, fast=a.fast, cost_ms=a.cost_ms)
    replays, out = {}, {"recording": rec, "hpa": hpa, "profiles": {}}
    for name, profile in PROFILES.items():
        runs, targets, curves, ph = replay_signals(rec, hpa, profile)
        rows, info = timing_table(runs, rec, hpa, profile)
        if not replays:
            print(recording_report(rec, ph, targets, source))
            out.update(phases=ph, curves=curves, targets=targets)
        print(replay_report(name, profile, rows, info))
        replays[name] = (profile, runs, info)
        out["profiles"][name] = {"profile": profile, "timings": rows, "info": info, "replay": runs}
    if a.svg:
        plot(a.svg, rec, replays, targets, hpa)
        print(f"wrote {a.svg}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
