"""llama.cpp (PyPI llama-cpp-python, built by scripts/setup_llama_cpp.sh) as the anchor the LLM
tests and benchmarks compare inferloop with, at full strength: llama.cpp's default model
parameters, weight-repacking buffers ("extra buffer types") on, as its users run it.

On an Intel CPU with AMX those buffers are ggml's AMX buffer ("AMX": Q4_0, Q4_1, Q8_0, Q4_K, Q5_K,
Q6_K and IQ4_XS weights repacked for AMX tiles; one-token products use AVX-512 VNNI); on other
x86 CPUs, "CPU_REPACK" (Q4_0, Q4_K, IQ4_NL and, with AVX-512, Q2_K interleaved for AVX2/AVX-512;
Q8_0 has no x86 repacking and stays in the plain "CPU_Mapped" buffer).

The AMX path used to die with SIGILL in llama_decode (the first prompt of more than one token):
built by GCC 12 (Debian 12), ggml's tile configuration lost its row and column sizes, because
GCC 12's _tile_loadconfig tells the compiler that ldtilecfg reads only 8 of its 64 bytes, so the
stores of the sizes were removed as dead; the tiles were loaded unconfigured and the first
tilezero faulted. scripts/setup_llama_cpp.sh therefore builds llama.cpp with clang-14 on AMX
CPUs, which keeps the stores, plus -D__AMX_INT8__ (clang calls that macro __AMXINT8__, and ggml
compiles its AMX kernels only under GCC's name); every other option keeps its default,
GGML_NATIVE included. The AMX path then runs, and nothing is turned off: AMX users get the
kernels a correctly compiled llama.cpp gives them. Elsewhere it uses pip's default compiler, so
non-AMX users' llama.cpp is exactly what `pip install llama-cpp-python` builds for them.

Builds: "native" is the venv's llama-cpp-python (above: ggml native for this CPU). For the
comparisons on inferloop's INFERLOOP_ISA=avx512 and avx2 paths, scripts/setup_llama_cpp_isa.sh
builds the same llama.cpp sources as a CPU with AVX-512 VNNI but no AMX ("avx512") or with AVX2
only ("avx2") would build them natively, into .venv/llama-cpp-isa/BUILD/lib; a process started
with build_env(BUILD) (LLAMA_CPP_LIB_PATH, which llama-cpp-python reads when it is imported)
loads that build instead. One process holds one build.

    .venv/bin/python scripts/llama_cpp_anchor.py probe MODEL.gguf [--threads N] [--build native|avx512|avx2]

loads MODEL with the default parameters in a child process, runs a 64-token prompt and two
decode steps, and prints JSON: {"ok": true|false, "buffers": [...], "repacked": [...],
"system_info": "...", ...}.
"""
import contextlib
import ctypes
import json
import os
import re
import signal
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ISA_BUILDS = os.path.join(ROOT, ".venv", "llama-cpp-isa")  # scripts/setup_llama_cpp_isa.sh
BUILDS = ("native", "avx512", "avx2")
_buffers = []  # (name, MiB) of each model buffer llama.cpp logged since the last reset
_hook = None   # the ctypes log callback (kept alive while it is installed)
# Buffers that are not a repacking buffer type: the plain CPU ones.
PLAIN_BUFFERS = {"CPU", "CPU_Mapped", "CPU_Host"}


def load():
    """The llama_cpp module (its default parameters untouched), or None when it is not installed.
    Installs a log hook that records the model buffers of every model loaded (model_buffers())."""
    try:
        import llama_cpp
        import llama_cpp._logger as logger
    except ImportError:
        return None
    global _hook
    if _hook is None:
        forward = logger.llama_log_callback

        def log(level, text, user_data):
            m = re.search(rb"load_tensors:\s+(\S+) model buffer size =\s+([\d.]+) MiB", text or b"")
            if m:
                _buffers.append((m.group(1).decode(), float(m.group(2))))
            forward(level, text, user_data)

        _hook = llama_cpp.llama_log_callback(log)
        llama_cpp.llama_log_set(_hook, ctypes.c_void_p(0))
    return llama_cpp


def reset_buffers():
    del _buffers[:]


def model_buffers():
    """[(buffer type name, MiB)] llama.cpp reported for the models loaded since reset_buffers()."""
    return list(_buffers)


def repacked(buffers):
    """The names among `buffers` that are weight-repacking buffer types (AMX, CPU_REPACK, ...)."""
    return sorted({name for name, _ in buffers if name not in PLAIN_BUFFERS})


@contextlib.contextmanager
def repack_off():
    """Inside: llama.cpp models load with weight repacking off (use_extra_bufts = false), the
    weakened anchor, to measure what repacking is worth; a ratio against it is void."""
    import llama_cpp.llama_cpp as c
    default = c.llama_model_default_params

    def without_repack():
        p = default()
        p.use_extra_bufts = False
        return p

    c.llama_model_default_params = without_repack
    try:
        yield
    finally:
        c.llama_model_default_params = default


def build_env(build):
    """The environment for a child process that is to load llama.cpp build `build` (BUILDS):
    "native" (the venv's llama-cpp-python; LLAMA_CPP_LIB_PATH removed) or an ISA build
    (LLAMA_CPP_LIB_PATH set to it). None when that build is not installed."""
    env = dict(os.environ)
    env.pop("LLAMA_CPP_LIB_PATH", None)
    if build == "native":
        return env
    lib = os.path.join(ISA_BUILDS, build, "lib")
    if build not in BUILDS or not os.path.exists(os.path.join(ISA_BUILDS, build + ".build")) \
            or not os.path.exists(os.path.join(lib, "libllama.so")):
        return None
    env["LLAMA_CPP_LIB_PATH"] = lib
    return env


def build_description(build):
    """One line naming build `build`: how it was built (its stamp), or that it is missing."""
    stamp = os.path.join(ROOT, ".venv", "llama-cpp-python.build") if build == "native" \
        else os.path.join(ISA_BUILDS, build + ".build")
    try:
        return f"{build}: " + open(stamp).read().strip()
    except OSError:
        return f"{build}: not installed" + ("" if build == "native" else f" (scripts/setup_llama_cpp_isa.sh {build})")


def probe(model, threads=2, timeout=600, build="native"):
    """Runs `model` on llama.cpp's default parameters in a child process (a crash there cannot
    take the caller down), on llama.cpp build `build` (build_env).
    {"ok", "buffers", "repacked", "system_info", "error"}."""
    env = build_env(build)
    if env is None:
        return {"ok": False, "buffers": [], "repacked": [], "system_info": "",
                "error": build_description(build)}
    cmd = [sys.executable, os.path.abspath(__file__), "probe", model, "--threads", str(threads)]
    p = subprocess.run(cmd, capture_output=True, timeout=timeout, env=env)
    last = p.stdout.decode("utf-8", "replace").strip().splitlines()
    if p.returncode == 0 and last:
        return json.loads(last[-1])
    why = signal.Signals(-p.returncode).name if p.returncode < 0 else f"exit status {p.returncode}"
    tail = p.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
    return {"ok": False, "buffers": [], "repacked": [], "system_info": "",
            "error": f"llama.cpp died ({why}): " + " | ".join(tail)}


def _probe_main(model, threads):
    llama_cpp = load()
    if llama_cpp is None:
        print(json.dumps({"ok": False, "buffers": [], "repacked": [], "system_info": "",
                          "error": "llama_cpp is not installed"}))
        return
    reset_buffers()
    llm = llama_cpp.Llama(model_path=model, n_ctx=256, n_threads=threads, n_threads_batch=threads, verbose=False)
    ids = [1] + [300 + i for i in range(63)]
    llm.eval(ids)  # a 64-token prompt: the many-token (repacked GEMM) path
    llm.eval([400])
    llm.eval([401])  # one-token steps: the decode path
    bufs = model_buffers()
    print(json.dumps({"ok": True, "buffers": bufs, "repacked": repacked(bufs),
                      "system_info": llama_cpp.llama_print_system_info().decode().strip(), "error": ""}))


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["probe"])
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--build", choices=BUILDS, help="run in a child process on this llama.cpp build")
    a = ap.parse_args()
    if a.build:
        print(json.dumps(probe(a.model, a.threads, build=a.build)))
    else:
        _probe_main(a.model, a.threads)
