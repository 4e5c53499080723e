#!/bin/bash
# Bench-only llama.cpp builds (not needed by scripts/test.sh): the anchors bench/llm_bench.py
# compares inferloop's INFERLOOP_ISA=avx512 and avx2 paths with, and llama.cpp's real server for
# bench/serve_bench.py's --llm mode.
#
# On this machine scripts/setup_llama_cpp.sh builds llama.cpp natively (GGML_NATIVE, which here
# means AMX). A user whose CPU has AVX-512 VNNI but no AMX (an AMD EPYC Zen 4) or only AVX2 gets
# a llama.cpp built natively for that CPU, without AMX kernels; inferloop's avx512 / avx2 paths
# are measured against that, not against llama.cpp's AMX build. So this builds the same
# llama.cpp sources that the pinned llama-cpp-python vendors (its sdist's vendor/llama.cpp) once
# per ISA, GGML_NATIVE=OFF and the ggml ISA options set as a native build on such a CPU sets
# them; everything else at llama.cpp's defaults (weight repacking, GGML_CPU_REPACK, on; OpenMP
# on; Release, as pip's scikit-build builds it):
#   avx512  SSE4.2 AVX AVX2 FMA F16C BMI2, AVX-512 F/CD/BW/DQ/VL (GGML_AVX512), VBMI, VNNI, BF16;
#           no AVX-VNNI (Zen 4 has none), no AMX
#   avx2    SSE4.2 AVX AVX2 FMA F16C BMI2; no AVX-512, no AVX-VNNI, no AMX
# Compiler: the system's cc/c++ (GCC 12 on Debian 12, OpenMP from libgomp), what `pip install
# llama-cpp-python` uses on those CPUs; GCC's AMX problem (scripts/setup_llama_cpp.sh) does not
# arise without AMX. LLAMA_ISA_COMPILER=clang-14 builds them with clang-14 and libomp instead, the
# toolchain of the native anchor. Measured on this shared 2-CPU machine (2026-12-02): with 2 threads
# while other jobs ran, the GCC builds' libgomp threads spin and collapse (avx512 build, Q4_0,
# 32-token prompt: 4.0 tok/s prefill with 2 threads, 54.0 with 1; OMP_WAIT_POLICY=passive 48.3).
# Only the libraries the binding loads are built (libllama, libggml*; not llama-cpp-python's
# common and mtmd libraries, which the bench does not use). Each lands in
# .venv/llama-cpp-isa/VARIANT/lib with a stamp (VARIANT.build, the version and the options);
# llama-cpp-python loads it in a process started with LLAMA_CPP_LIB_PATH=that directory
# (scripts/llama_cpp_anchor.py: isa_build, probe).
#
#   server  llama-server (tools/server), built as scripts/setup_llama_cpp.sh builds the library
#           on this CPU: GGML_NATIVE on, and on an AMX CPU clang-14 with -D__AMX_INT8__; static
#           libraries, no SSL. Lands in .venv/llama-cpp-isa/server/bin/llama-server.
#
# Usage: scripts/setup_llama_cpp_isa.sh [avx512] [avx2] [server]   (default: avx512 avx2)
# Each takes several minutes on two cores; a variant whose stamp matches is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
[ -x "$PY" ] || { echo "setup_llama_cpp_isa: no .venv (run scripts/setup_venv.sh first)" >&2; exit 1; }
want=$(grep -E '^llama-cpp-python==' scripts/requirements-llama-cpp.txt | cut -d= -f3)
root=$PWD/.venv/llama-cpp-isa
work=${LLAMA_ISA_WORK:-/tmp/llama-cpp-isa-$want}
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(avx512 avx2)

cc_opts=""
if [ -n "${LLAMA_ISA_COMPILER:-}" ]; then
  cxx=${LLAMA_ISA_COMPILER/clang/clang++}
  cc_opts="-DCMAKE_C_COMPILER=$LLAMA_ISA_COMPILER -DCMAKE_CXX_COMPILER=$cxx "
fi
common="$cc_opts-DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_CPU_REPACK=ON -DGGML_AVX_VNNI=OFF \
-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
-DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
lib_only="-DBUILD_SHARED_LIBS=ON -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF \
-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF"
options() {
  case "$1" in
    avx512) echo "$common -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON $lib_only" ;;
    avx2) echo "$common -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF $lib_only" ;;
    server)
      local o="-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TOOLS=ON \
-DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF"
      if grep -qw amx_int8 /proc/cpuinfo 2>/dev/null; then
        o="-DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_C_FLAGS=-D__AMX_INT8__ -DCMAKE_CXX_FLAGS=-D__AMX_INT8__ $o"
      fi
      echo "$o" ;;
    *) echo "setup_llama_cpp_isa: unknown variant $1 (avx512, avx2, server)" >&2; exit 2 ;;
  esac
}

src=$work/llama_cpp_python-$want/vendor/llama.cpp
fetch_sources() {
  [ -f "$src/CMakeLists.txt" ] && return
  mkdir -p "$work"
  .venv/bin/pip download -q --no-binary :all: --no-deps "llama-cpp-python==$want" -d "$work"
  tar xzf "$work/llama_cpp_python-$want.tar.gz" -C "$work"
}

jobs=${LLAMA_ISA_JOBS:-$(nproc 2>/dev/null || echo 2)}  # parallel compile jobs
for v in "${variants[@]}"; do
  opts=$(options "$v")
  stamp=$root/$v.build
  want_stamp="llama.cpp from llama-cpp-python==$want ($v): $opts"
  if [ "$(cat "$stamp" 2>/dev/null)" = "$want_stamp" ]; then
    echo "setup_llama_cpp_isa: $v present ($stamp)"
    continue
  fi
  fetch_sources
  rm -f "$stamp"
  rm -rf "$root/$v"
  echo "setup_llama_cpp_isa: building $v: cmake $opts (several minutes) ..."
  # shellcheck disable=SC2086
  cmake -S "$src" -B "$work/build-$v" $opts -DCMAKE_INSTALL_PREFIX="$root/$v" -DCMAKE_INSTALL_LIBDIR=lib \
    '-DCMAKE_INSTALL_RPATH=$ORIGIN' >"$work/cmake-$v.log"
  if [ "$v" = server ]; then
    cmake --build "$work/build-$v" -j"$jobs" --target llama-server
    mkdir -p "$root/$v/bin"
    cp "$work/build-$v/bin/llama-server" "$root/$v/bin/"
    "$root/$v/bin/llama-server" --version 2>&1 | tail -2
  else
    cmake --build "$work/build-$v" -j"$jobs" --target llama
    cmake --install "$work/build-$v" >/dev/null
    info=$(LLAMA_CPP_LIB_PATH="$root/$v/lib" "$PY" -c 'import llama_cpp; print(llama_cpp.llama_print_system_info().decode())')
    echo "setup_llama_cpp_isa: $v: $info"
    case "$v" in
      avx512) grep -q "AVX512_VNNI = 1" <<<"$info" && ! grep -q "AMX_INT8 = 1" <<<"$info" ;;
      avx2) grep -q "AVX2 = 1" <<<"$info" && ! grep -q "AVX512 = 1" <<<"$info" ;;
    esac || { echo "setup_llama_cpp_isa: $v does not report the ISA it was built for" >&2; exit 1; }
  fi
  echo "$want_stamp" >"$stamp"
done
