#!/bin/bash
# Installs llama.cpp's Python binding (PyPI llama-cpp-python, pinned in
# scripts/requirements-llama-cpp.txt) into the project venv: the anchor that the LLM tests
# (tests/e2e/test_llama_cpp.py) and benchmarks (bench/llm_bench.py) compare inferloop with.
# PyPI ships it as source: pip compiles llama.cpp with its defaults (ggml native for this CPU,
# weight repacking on; no tools, examples, server or multimodal library), which takes several minutes.
#
# Compiler: on a CPU with AMX, clang-14 (with its OpenMP, libomp-14-dev) and -D__AMX_INT8__.
# GCC 12's <amxtileintrin.h> (Debian 12) declares that ldtilecfg reads 8 bytes of the 64-byte
# tile configuration, so GCC deletes the stores of the tile rows and column widths in ggml's AMX
# code: the tiles are loaded unconfigured and the first tile instruction of a prompt's matrix
# product raises SIGILL (the llama_decode crash on AMX machines). clang keeps those stores, but
# names its AMX-INT8 macro __AMXINT8__ where ggml tests GCC's __AMX_INT8__, so without the define
# clang would leave ggml's AMX kernels out. With both, llama.cpp runs its AMX path (the "AMX"
# model buffer) as on a correctly compiled build. Elsewhere pip's default compiler, as a user's
# `pip install llama-cpp-python` gets; every other option keeps its default (GGML_NATIVE on).
#
# The flags are recorded in .venv/llama-cpp-python.build; an install built otherwise (another
# version, or the same version built with other flags) is rebuilt from source without pip's
# wheel cache, which would hand back the old build.
# Usage: scripts/setup_llama_cpp.sh   (after scripts/setup_venv.sh and scripts/install_deps.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
[ -x "$PY" ] || { echo "setup_llama_cpp: no .venv (run scripts/setup_venv.sh first)" >&2; exit 1; }
want=$(grep -E '^llama-cpp-python==' scripts/requirements-llama-cpp.txt | cut -d= -f3)
# LLAVA_BUILD=OFF: not the multimodal library (libmtmd: clip, audio), which no text test or bench
# loads (llama_cpp imports it only for its vision chat handlers): less of CI's build time, and the
# text path (libllama, ggml-cpu) is built exactly as by default.
args="-DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAVA_BUILD=OFF"
if grep -qw amx_int8 /proc/cpuinfo 2>/dev/null; then
  for tool in clang-14 clang++-14; do
    command -v "$tool" >/dev/null || { echo "setup_llama_cpp: this CPU has AMX: llama.cpp is built with $tool (scripts/install_deps.sh installs it)" >&2; exit 1; }
  done
  [ -e /usr/lib/llvm-14/lib/libomp.so ] || { echo "setup_llama_cpp: this CPU has AMX: llama.cpp is built with clang-14 and its OpenMP, libomp-14-dev (scripts/install_deps.sh installs it)" >&2; exit 1; }
  args="-DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_C_FLAGS=-D__AMX_INT8__ -DCMAKE_CXX_FLAGS=-D__AMX_INT8__ $args"
fi
stamp=.venv/llama-cpp-python.build
want_stamp="llama-cpp-python==$want CMAKE_ARGS=$args"
have=$("$PY" -c 'import importlib.metadata as m; print(m.version("llama-cpp-python"))' 2>/dev/null || true)
if [ "$have" = "$want" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want_stamp" ]; then
  echo "setup_llama_cpp: llama-cpp-python $have present ($want_stamp)"
  exit 0
fi
jobs=$(nproc 2>/dev/null || echo 2)
echo "setup_llama_cpp: building llama-cpp-python $want with CMAKE_ARGS=\"$args\" (a few minutes) ..."
rm -f "$stamp"
CMAKE_BUILD_PARALLEL_LEVEL=$jobs CMAKE_ARGS="$args" \
  .venv/bin/pip install -q --no-cache-dir --force-reinstall --no-deps --no-binary llama-cpp-python "llama-cpp-python==$want"
.venv/bin/pip install -q -r scripts/requirements-llama-cpp.txt  # its dependencies
info=$("$PY" -c 'import llama_cpp; print("llama_cpp", llama_cpp.__version__, llama_cpp.llama_print_system_info().decode())')
echo "setup_llama_cpp: $info"
if grep -qw amx_int8 /proc/cpuinfo 2>/dev/null && ! grep -q "AMX_INT8 = 1" <<<"$info"; then
  echo "setup_llama_cpp: this CPU has AMX but llama.cpp was built without its AMX kernels" >&2
  exit 1
fi
echo "$want_stamp" > "$stamp"
