"""Runs a benchmark's processes as on a CPU without AMX (avx512) or without AVX-512 (avx2), anchors
included: bench/cpuid_mask.c (an LD_PRELOAD library) hides the CPUID feature bits such a CPU lacks,
so ONNX Runtime and llama.cpp, which choose their kernels from CPUID and cannot be capped otherwise,
run the kernels they run on that CPU, next to inferloop on the same INFERLOOP_ISA path.

    import isa_mask; note = isa_mask.apply_from_isa_env(build_dir)

With INFERLOOP_ISA=avx512 or avx2 in the environment (and INFERLOOP_ANCHOR_UNMASKED unset), sets
LD_PRELOAD, INFERLOOP_CPUID_MASK and GLIBC_TUNABLES in os.environ for every process the bench
starts afterwards (not for the bench's own Python process) and returns a line for the table
header; else returns a line saying the anchor saw the whole CPU. Builds the library (CMake target
cpuid_mask) when missing, and checks in a child process that the mask took effect (numpy's CPU
feature detection, which reads CPUID), failing loudly otherwise (a kernel without CPUID faulting:
the library refuses to run). On a CPU that has AVX-512 VNNI and no AMX itself, avx512 needs no
mask. cpu_flags() is the benches' reader of the CPU's feature flags.
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# glibc chose its string functions before the library loads; these tunables make it choose as on
# a CPU without AVX-512.
GLIBC_NO_AVX512 = "glibc.cpu.hwcaps=-AVX512F,-AVX512CD,-AVX512BW,-AVX512DQ,-AVX512VL"
CHECK = ("from numpy._core._multiarray_umath import __cpu_features__ as f; "
         "print(int(f['AVX512F']), int(f['AVX512VNNI']), int(f['AVX2']))")


def library(build_dir):
    """build_dir's libcpuid_mask.so (built there when build_dir is a CMake build folder), else the
    repository's build/ one."""
    if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
        build_dir = os.path.join(ROOT, "build")
    lib = os.path.join(build_dir, "libcpuid_mask.so")
    if not os.path.exists(lib):
        subprocess.run(["cmake", "--build", build_dir, "--target", "cpuid_mask"], check=True, capture_output=True)
    return lib


def masked_env(isa, build_dir, env=None):
    """A copy of env (default os.environ) whose processes see the CPU as `isa` (avx512 / avx2)."""
    env = dict(os.environ if env is None else env)
    lib = library(build_dir)
    env["LD_PRELOAD"] = lib + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    env["INFERLOOP_CPUID_MASK"] = isa
    if isa == "avx2":
        env["GLIBC_TUNABLES"] = GLIBC_NO_AVX512 + (":" + env["GLIBC_TUNABLES"] if env.get("GLIBC_TUNABLES") else "")
    want = {"avx512": "1 1 1", "avx2": "0 0 1"}[isa]
    got = subprocess.run([sys.executable, "-c", CHECK], env=env, capture_output=True, text=True)
    if got.returncode != 0 or got.stdout.strip() != want:
        sys.exit(f"isa_mask: the CPUID mask {isa} did not take effect (AVX512F AVX512VNNI AVX2 = "
                 f"{got.stdout.strip() or got.stderr.strip()[-300:]}, want {want})")
    return env


def cpu_flags():
    """The CPU's feature flags, as /proc/cpuinfo's first "flags" line names them (empty when unreadable)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def apply_from_isa_env(build_dir=os.path.join(ROOT, "build")):
    isa = os.environ.get("INFERLOOP_ISA", "")
    if isa not in ("avx512", "avx2"):
        return "anchor: the whole CPU (no INFERLOOP_ISA cap)"
    if os.environ.get("INFERLOOP_ANCHOR_UNMASKED") == "1":
        return f"anchor: the whole CPU (INFERLOOP_ANCHOR_UNMASKED=1; inferloop capped to {isa}): not a same-CPU comparison"
    flags = cpu_flags()
    if isa == "avx512" and "amx_int8" not in flags and "avx512_vnni" in flags:
        return "anchor: the whole CPU, which has AVX-512 VNNI and no AMX itself (no mask needed)"
    os.environ.update(masked_env(isa, build_dir))
    what = {"avx512": "AVX-512 with VNNI, no AMX", "avx2": "AVX2 only, no AVX-512, no AVX-VNNI"}[isa]
    return f"CPUID mask {isa}: every process (the anchor too) sees a CPU with {what} (bench/cpuid_mask.c)"
