#!/bin/bash
# Installs llama.cpp's Python binding (PyPI llama-cpp-python, pinned in
# scripts/requirements-llama-cpp.txt) into the project venv: the anchor that the LLM tests
# (tests/e2e/test_llama_cpp.py) and benchmarks (bench/llm_bench.py) compare inferloop with.
# PyPI ships it as source: pip compiles llama.cpp (ggml for this CPU, no tools or server), which
# takes several minutes; pip caches the built wheel, so later runs are quick.
# Usage: scripts/setup_llama_cpp.sh   (after scripts/setup_venv.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
[ -x "$PY" ] || { echo "setup_llama_cpp: no .venv (run scripts/setup_venv.sh first)" >&2; exit 1; }
want=$(grep -E '^llama-cpp-python==' scripts/requirements-llama-cpp.txt | cut -d= -f3)
have=$("$PY" -c 'import importlib.metadata as m; print(m.version("llama-cpp-python"))' 2>/dev/null || true)
if [ "$have" = "$want" ]; then
  echo "setup_llama_cpp: llama-cpp-python $have present"
  exit 0
fi
jobs=$(nproc 2>/dev/null || echo 2)
echo "setup_llama_cpp: building llama-cpp-python $want (a few minutes) ..."
CMAKE_BUILD_PARALLEL_LEVEL=$jobs CMAKE_ARGS="-DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF" \
  .venv/bin/pip install -q -r scripts/requirements-llama-cpp.txt
"$PY" -c 'import llama_cpp; print("setup_llama_cpp: llama_cpp", llama_cpp.__version__)'
