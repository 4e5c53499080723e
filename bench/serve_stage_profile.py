"""Server CPU per REST request, by stage: where `inferloop serve` spends a small request's time.

Serves the example repository (--threads 1, as bench/serve_bench.py), loads it with wrk (2 threads,
64 connections, the `simple` model's JSON request of serve_bench.py, or DLRM's with --model
dlrm_batched and --repository a serve_bench repository), reads the server's CPU time per request
from /proc over an unprofiled run, then samples the server with perf (call graphs, DWARF) over a
second run and puts each sample in a stage: kernel samples by their system call (sendto,
recvfrom, futex, epoll_wait, ...; scheduling and interrupts apart), user samples by the innermost
frame that names a stage (JSON decode / encode, HTTP parse and write, the model, batching,
admission, ...), allocator frames first. Prints the stages' shares and their us per request (the
share times the unprofiled CPU per request: perf slows the process, so its own totals are not
used). Needs perf (Debian linux-perf) and wrk; run as root or with perf_event_paranoid <= 1.

    .venv/bin/python bench/serve_stage_profile.py [--inferloop build/inferloop] [--seconds 4]

The stage patterns are symbol-name regexes (STAGES below): a stage is only as exact as they are;
"other:" rows name the leaf of samples no pattern matched.
"""
import argparse
import collections
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_bench import cpu_seconds, dlrm_body, simple_body  # noqa: E402  (serve_bench's requests and CPU reading)

STAGES = [
    ("json_decode", r"DecodeJsonInferRequest|TryDecodeJsonInferRequestFast|simdjson::|rapidjson::GenericReader|ParseInput|"
                    r"ConvertLeaves|CheckNestingDepth|NumberConverting|v2_tensor_data|ReadElements|ReadInput"),
    ("json_encode", r"EncodeJsonInferResponse|rapidjson::Writer|WriteTensor|StringOutput"),
    ("model_run", r"Session::Impl|ExecutionPlan|RunModel|Kernel|compute::"),
    ("batch_assembly", r"AssembleBatch|SplitAssembled|ComputeBatchShape|GatherBatchInputs|ShapeToString"),
    ("http_write", r"response_serializer|AppendSerialized|WriteGathered|chunk_crlf|serializer<false"),
    ("http_parse", r"basic_parser|parse_fields|read_some_op|http::detail::read|PathSegments|RestRouter|basic_fields"),
    ("serve_admission", r"Admission|ValidateRequest|InferenceServer::|ServedModelVersion::Infer\b|Ticket|LoadWindow|"
                        r"CircuitBreaker|Dispatch"),
    ("serve_other", r"inferloop::serve::"),
    ("rest_handler", r"RestHandler|frontends::\(anonymous namespace\)::Infer"),
    ("http_session", r"http_internal::Session|HttpResponder|HttpRequest"),
    ("asio", r"boost::asio"),
]
ALLOCATOR = re.compile(r"malloc|_int_free|cfree|\bfree\b|operator new|operator delete|unlink_chunk|_int_memalign|tcache|"
                       r"pool_resource|memalign")
SYSCALL = re.compile(r"__x64_sys_(\w+)|(exit_to_user_mode_loop|irqentry|asm_sysvec|asm_common_interrupt|schedule)")

def classify(sample, patterns):
    """The stage of one perf sample (a list of (function, dso) frames, innermost first)."""
    leaf_fn, leaf_dso = sample[0]
    if "[kernel" in leaf_dso:
        stage = "kernel_other"
        for fn, _ in sample:
            m = SYSCALL.search(fn)
            if m:
                stage = "kernel_" + (m.group(1) or "sched/irq")
                if m.group(1):
                    break
        return stage
    if ALLOCATOR.search(leaf_fn):
        return "malloc_free"
    for fn, _ in sample:
        for name, pattern in patterns:
            if pattern.search(fn):
                return name
    return "other:" + leaf_fn[:60]


def stage_counts(perf_script_text, detail=None):
    """Samples per stage; and for stage `detail`, samples per (leaf function, caller frames)."""
    patterns = [(n, re.compile(p)) for n, p in STAGES]
    counts, details, sample = collections.Counter(), collections.Counter(), []

    def take(sample):
        stage = classify(sample, patterns)
        counts[stage] += 1
        if stage == detail:
            details[" <- ".join(fn[:70] for fn, _ in sample[:4])] += 1

    for line in perf_script_text.splitlines():
        if line and not line[0].isspace():
            if sample:
                take(sample)
            sample = []
            continue
        parts = line.strip().split(" ", 1)
        if len(parts) < 2:
            continue
        m = re.match(r"(.*) \((.*)\)$", parts[1])
        sample.append((m.group(1), m.group(2)) if m else (parts[1], ""))
    if sample:
        take(sample)
    return counts, details


def wrk(port, model, lua, seconds):
    out = subprocess.run(["wrk", "-t2", "-c64", f"-d{seconds}s", "-s", lua, f"http://127.0.0.1:{port}/v2/models/{model}/infer"],
                         capture_output=True, text=True, check=True).stdout
    return int(re.search(r"(\d+) requests in", out).group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inferloop", default=os.path.join(ROOT, "build", "inferloop"))
    ap.add_argument("--repository", default=os.path.join(ROOT, "examples", "model_repository"))
    ap.add_argument("--model", default="simple", help="simple (default), or dlrm_batched / dlrm_unbatched of a serve_bench repository")
    ap.add_argument("--seconds", type=int, default=4)
    ap.add_argument("--port", type=int, default=18090)
    ap.add_argument("--detail", help="a stage whose samples to list by their innermost frames")
    a = ap.parse_args()
    body = simple_body() if a.model == "simple" else dlrm_body()
    with tempfile.TemporaryDirectory() as tmp:
        lua = os.path.join(tmp, "body.lua")
        with open(lua, "w") as f:
            f.write('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = ' +
                    json.dumps(body) + "\n")
        server = subprocess.Popen([a.inferloop, "serve", "--model-repository", a.repository, "--http-port", str(a.port),
                                   "--grpc-port", "-1", "--metrics-port", "0", "--threads", "1"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{a.port}/v2/health/ready", timeout=1)
                    break
                except OSError:
                    time.sleep(0.2)
            else:
                sys.exit("the server did not become ready")
            wrk(a.port, a.model, lua, 2)  # warm
            t0 = cpu_seconds([server.pid])
            n = wrk(a.port, a.model, lua, a.seconds)
            us_per_request = (cpu_seconds([server.pid]) - t0) * 1e6 / n
            data = os.path.join(tmp, "perf.data")
            perf = subprocess.Popen(["perf", "record", "-F", "2000", "-g", "--call-graph", "dwarf,16384", "-o", data,
                                     "-p", str(server.pid), "--", "sleep", str(a.seconds)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wrk(a.port, a.model, lua, a.seconds)
            perf.wait()
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
        script = subprocess.run(["perf", "script", "-i", data], capture_output=True, text=True, errors="replace").stdout
    counts, details = stage_counts(script, a.detail)
    total = sum(counts.values())
    print(f"{a.model}: {us_per_request:.1f} us of server CPU per request (unprofiled run, {n} requests); "
          f"{total} perf samples of the profiled run\n")
    print("| stage | share | us per request |\n|---|---:|---:|")
    small = 0
    for stage, count in counts.most_common():
        if stage.startswith("other:") and count / total < 0.004:
            small += count
            continue
        print(f"| {stage} | {100 * count / total:.1f}% | {us_per_request * count / total:.1f} |")
    print(f"| other (each under 0.4%) | {100 * small / total:.1f}% | {us_per_request * small / total:.1f} |")
    if a.detail:
        print(f"\n{a.detail}, by innermost frames (share of all samples):")
        for frames, count in details.most_common(25):
            print(f"{100 * count / total:5.2f}%  {frames}")


if __name__ == "__main__":
    main()
