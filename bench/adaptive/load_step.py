"""The adaptive loop's load step (bench/adaptive_bench.py runs it; docs/ADAPTIVE.md).

ResNet-50 with a trained linear-probe head on a synthetic 10-class image task
(bench/models/resnet50_probe, made by /usr/bin/python3 bench/adaptive/make_probe_resnet50.py) is
served twice, one server after the other on the same machine, in one run:
  static    the config a user writes today: max_batch_size 8, dynamic_batching { } (fp32)
  adaptive  the same plus adaptive { latency_slo { percentile: 99 milliseconds: SLO } ... } with the
            model's calibration/ and evaluation/ sets (held-out images with true labels: the
            accuracy metric is top-1 accuracy)
The open-loop load (Poisson arrivals, each request timed from its scheduled send time) steps from
20% to 150% of fp32's capacity and back. fp32's capacity is its best rows/s over batch sizes,
measured by the adaptive server at load (the variant table). Requests go as KServe binary tensors.
"""
import http.client
import json
import os
import random
import shutil
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
from serve_harness import Server, get_json  # noqa: E402

ZOO = os.path.join(HERE, "..", "models", "resnet50_probe")


def make_repository(root, adaptive_block):
    d = os.path.join(root, "resnet50")
    os.makedirs(os.path.join(d, "1"))
    shutil.copy(os.path.join(ZOO, "model.onnx"), os.path.join(d, "1", "model.onnx"))
    cfg = 'max_batch_size: 8\ndynamic_batching { }\n' + adaptive_block
    with open(os.path.join(d, "config.pbtxt"), "w") as f:
        f.write(cfg)
    if adaptive_block:
        for sub in ("calibration", "evaluation"):
            shutil.copytree(os.path.join(ZOO, sub), os.path.join(d, sub))


def request_body():
    x = np.load(os.path.join(ZOO, "evaluation", "image.npy"))[:1].tobytes()
    header = json.dumps({"inputs": [{"name": "image", "shape": [1, 3, 224, 224], "datatype": "FP32",
                                     "parameters": {"binary_data_size": len(x)}}],
                         "outputs": [{"name": "logits", "parameters": {"binary_data": True}}]}).encode()
    return header + x, {"Inference-Header-Content-Length": str(len(header)),
                        "Content-Type": "application/octet-stream"}


class OpenLoop:
    """Sends requests at scheduled times from a pool of persistent connections; each latency is
    measured from the scheduled time, so a server that falls behind shows it."""

    def __init__(self, port, path, workers=96, body=None, headers=None):
        """body/headers: the request every call sends (None: the ResNet-50 image request)."""
        self.port, self.path = port, path
        self.body, self.headers = (body, headers) if body is not None else request_body()
        self.local = threading.local()
        self.pool = ThreadPoolExecutor(max_workers=workers)
        self.results = []  # (scheduled offset s, latency ms, ok)
        self.lock = threading.Lock()

    def _send(self, t0, scheduled):
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        ok = False
        try:
            conn.request("POST", self.path, body=self.body, headers=self.headers)
            r = conn.getresponse()
            r.read()
            ok = r.status == 200
        except (OSError, http.client.HTTPException):
            self.local.conn = None
        lat = (time.perf_counter() - (t0 + scheduled)) * 1000
        with self.lock:
            self.results.append((scheduled, lat, ok))

    def run(self, steps, seed=1):
        """steps: [(seconds, rate rps)]. Returns when every request was answered."""
        rnd = random.Random(seed)
        schedule, t = [], 0.0
        for seconds, rate in steps:
            end = t + seconds
            while True:
                t += rnd.expovariate(rate)
                if t >= end:
                    t = end
                    break
                schedule.append(t)
        t0 = time.perf_counter()
        futs = []
        for s in schedule:
            delay = t0 + s - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            futs.append(self.pool.submit(self._send, t0, s))
        for f in futs:
            f.result()
        return t0


def poll_state(port, stop, out, t0_box):
    while not stop.is_set():
        status, body = get_json(port, "/v2/models/resnet50/adaptive")
        if status == 200 and t0_box:
            k = body["knobs"]
            out.append((time.perf_counter() - t0_box[0], body["variant"], k["preferred_batch_size"],
                        k["max_queue_delay_us"], k["instances"]))
        time.sleep(0.5)


def pct(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(np.ceil(p / 100 * len(v))) - 1))]


def step_table(results, steps, settle):
    rows, t = [], 0.0
    for seconds, rate in steps:
        inside = [(s, l, ok) for s, l, ok in results if t <= s < t + seconds]
        settled = [l for s, l, ok in inside if s >= t + settle and ok]
        settled2 = [l for s, l, ok in inside if s >= t + 2 * settle and ok]
        ok_lat = [l for s, l, ok in inside if ok]
        rows.append({"from_s": t, "rate": rate, "sent": len(inside), "failed": sum(1 for x in inside if not x[2]),
                     "p50": pct(ok_lat, 50), "p99": pct(ok_lat, 99), "p99_settled": pct(settled, 99),
                     "p99_settled2": pct(settled2, 99)})
        t += seconds
    return rows


def svg_timeline(path, title, series, steps, slo_ms, duration):
    """series: {name: (results, variant_samples)}; one panel per series: p99 per 2 s bucket (log
    scale), offered load, variant bands."""
    W, H, PAD = 900, 230, 50
    colors = {"fp32": "#4c72b0", "bf16": "#55a868", "int8": "#c44e52"}
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H * len(series) + 40}" font-family="sans-serif" font-size="11">',
             f'<text x="{PAD}" y="20" font-size="14">{title}</text>']
    ymax = np.log10(max(slo_ms * 20, 10))
    ymin = np.log10(max(slo_ms / 20, 0.5))
    for k, (name, (results, variants)) in enumerate(series.items()):
        top = 40 + k * H
        h = H - 50

        def X(t):
            return PAD + (W - 2 * PAD) * t / duration

        def Y(ms):
            v = (np.log10(max(ms, 10 ** ymin)) - ymin) / (ymax - ymin)
            return top + h - h * min(1.0, max(0.0, v))
        parts.append(f'<text x="{PAD}" y="{top - 4}" font-size="12">{name}</text>')
        parts.append(f'<rect x="{PAD}" y="{top}" width="{W - 2 * PAD}" height="{h}" fill="none" stroke="#999"/>')
        for i, (t, v, b, *_rest) in enumerate(variants):
            t2 = variants[i + 1][0] if i + 1 < len(variants) else duration
            parts.append(f'<rect x="{X(t):.1f}" y="{top + h}" width="{max(0.5, X(t2) - X(t)):.1f}" height="8" fill="{colors.get(v, "#888")}"/>')
        parts.append(f'<line x1="{PAD}" x2="{W - PAD}" y1="{Y(slo_ms):.1f}" y2="{Y(slo_ms):.1f}" stroke="#c00" stroke-dasharray="4,3"/>')
        parts.append(f'<text x="{W - PAD + 4}" y="{Y(slo_ms) + 4:.1f}" fill="#c00">SLO</text>')
        pts, b = [], 0.0
        while b < duration:
            lat = [l for s, l, ok in results if b <= s < b + 2]
            if lat:
                pts.append(f"{X(b + 1):.1f},{Y(pct(lat, 99)):.1f}")
            b += 2
        parts.append(f'<polyline fill="none" stroke="#222" stroke-width="1.5" points="{" ".join(pts)}"/>')
        maxrate = max(r for _, r in steps)
        t, lpts = 0.0, []
        for seconds, rate in steps:
            y = top + h - h * 0.9 * rate / maxrate
            lpts += [f"{X(t):.1f},{y:.1f}", f"{X(t + seconds):.1f},{y:.1f}"]
            t += seconds
        parts.append(f'<polyline fill="none" stroke="#e69f00" stroke-width="1" points="{" ".join(lpts)}"/>')
        for ms in (1, 10, 100, 1000, 10000):
            if ymin <= np.log10(ms) <= ymax:
                parts.append(f'<text x="4" y="{Y(ms) + 4:.1f}">{ms} ms</text>')
    legend = "black: p99 per 2 s (log scale); orange: offered load; bar: variant (blue fp32, green bf16, red int8)"
    parts.append(f'<text x="{PAD}" y="{H * len(series) + 30}">{legend}</text></svg>')
    with open(path, "w") as f:
        f.write("\n".join(parts))


def run(inferloop, workdir, step_seconds=30, slo_ms=None, svg=None, threads=2):
    """Returns (report text, data)."""
    probe_root = os.path.join(workdir, "adaptive")
    block = ('adaptive {{ latency_slo {{ percentile: 99 milliseconds: {slo} }} max_accuracy_drop: 3 '
             'max_queue_delay_microseconds: {delay} window_ms: 2000 }}\n')
    # The SLO is set from fp32's own costs once they are measured: first a probe load for the table.
    make_repository(probe_root, block.format(slo=1000, delay=100000))
    server = Server(inferloop, probe_root, "--threads", str(threads), timeout=900)
    try:
        _, state = get_json(server.http_port, "/v2/models/resnet50/adaptive")
    finally:
        server.terminate()
    table = {v["name"]: v for v in state["variants"]}
    fp32 = dict(table["fp32"]["latency_ms"])
    capacity = max(b * 1000.0 / ms for b, ms in fp32.items())
    if slo_ms is None:
        slo_ms = round(5 * fp32[1])  # fp32 meets it at 20% load (its p99 is ~3x its median here); nothing fp32 meets it at 150%
    steps = [(step_seconds, 0.2 * capacity), (step_seconds, 1.5 * capacity), (step_seconds, 0.2 * capacity)]
    shutil.rmtree(probe_root)
    out = {"capacity_rps": capacity, "slo_ms": slo_ms, "variants": state["variants"], "runs": {}}
    series = {}
    for name, blk in (("static fp32", ""), ("adaptive", block.format(slo=slo_ms, delay=int(slo_ms * 250)))):
        root = os.path.join(workdir, name.replace(" ", "_"))
        make_repository(root, blk)
        server = Server(inferloop, root, "--threads", str(threads), timeout=900)
        try:
            loop = OpenLoop(server.http_port, "/v2/models/resnet50/infer")
            loop.run([(3, 0.2 * capacity)], seed=99)  # warm the connections
            loop.results.clear()
            stop, samples, t0_box = threading.Event(), [], []
            poller = None
            if blk:
                poller = threading.Thread(target=poll_state, args=(server.http_port, stop, samples, t0_box), daemon=True)
                poller.start()
            t0_box.append(time.perf_counter())
            loop.run(steps)
            stop.set()
            if poller:
                poller.join()
            if not blk:
                samples = [(0.0, "fp32", 1, 0, 1)]
            decisions = [e for e in server.find_events("adaptive_decision")]
            out["runs"][name] = {"steps": step_table(loop.results, steps, settle=5), "decisions": decisions}
            series[name] = (list(loop.results), samples)
        finally:
            server.terminate()
        shutil.rmtree(root)
    if svg:
        svg_timeline(svg, f"ResNet-50 load step, SLO p99 {slo_ms} ms", series, steps, slo_ms, 3 * step_seconds)
    return out


def report(out):
    lines = [f"fp32 capacity {out['capacity_rps']:.1f} req/s (best over batch sizes); SLO p99 {out['slo_ms']} ms",
             "variants prepared at load:"]
    for v in out["variants"]:
        lat = ", ".join(f"b{b} {ms:.1f}" for b, ms in v["latency_ms"])
        state = "usable" if v["usable"] else "skipped: " + v["skipped_reason"]
        drop = f"drop {v['accuracy_drop']:.2f} pp ({v['metric']})" if v.get("accuracy_drop") is not None else ""
        lines.append(f"  {v['name']:5} {state}; {drop}; {v['memory_bytes'] / 2**20:.0f} MiB; ms: {lat}")
    lines.append("| step | load req/s | static fp32 p50 / p99 ms | adaptive p50 / p99 ms | adaptive p99 after 5 s / 10 s settling | failed (static / adaptive) |")
    lines.append("|---|---:|---:|---:|---:|---:|")
    st, ad = out["runs"]["static fp32"]["steps"], out["runs"]["adaptive"]["steps"]
    for i, (a, b) in enumerate(zip(st, ad)):
        lines.append(f"| {i + 1} | {a['rate']:.1f} | {a['p50']:.0f} / {a['p99']:.0f} | {b['p50']:.0f} / {b['p99']:.0f} | "
                     f"{b['p99_settled']:.0f} / {b.get('p99_settled2', float('nan')):.0f} | {a['failed']} / {b['failed']} |")
    lines.append("adaptive decisions:")
    for e in out["runs"]["adaptive"]["decisions"]:
        lines.append(f"  {e['ts']} {e['reason']:>15} -> {e['variant']} batch {e['batch_size']} delay {e['queue_delay_us']} us "
                     f"instances {e['instances']} (rate {e.get('rate_rps', '-')}/s, predicted {e.get('predicted_ms', '-')} ms, "
                     f"observed {e.get('observed_ms', '-')} ms)")
    return "\n".join(lines)
