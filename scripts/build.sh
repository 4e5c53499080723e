#!/bin/bash
# Configures and builds inferloop into build/ (Release with debug info).
# Usage: scripts/build.sh [--target NAME]... [extra cmake args...]
#   --target NAME  builds only NAME and what it needs (repeatable; e.g. --target inferloop for the
#                  command-line tool alone); without it, everything: the tool, every test and tool.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
targets=()
cmake_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --target) [ $# -ge 2 ] || { echo "build.sh: --target needs a name" >&2; exit 2; }
              targets+=(--target "$2"); shift 2 ;;
    --target=*) targets+=(--target "${1#--target=}"); shift ;;
    *) cmake_args+=("$1"); shift ;;
  esac
done
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo ${cmake_args[@]+"${cmake_args[@]}"} >/dev/null
cmake --build build -j"$jobs" ${targets[@]+"${targets[@]}"}
