#!/bin/bash
# Runs the ONNX backend node tests with inferloop test-onnx.
# Usage: run_onnx_backend.sh INFERLOOP_BINARY EXCLUSIONS_FILE [PYTHON GENERATED_DIR]
# Two copies of the suite, each run when available, with the same exclusions:
#  1. generated from the pinned onnx package (PYTHON: the project venv's, scripts/setup_venv.sh) into
#     GENERATED_DIR (in the build tree) by generate_onnx_node_tests.py: the cases of
#     onnx_node_cases.txt (ONNX v1.20.0's case list), with the pinned onnx's models and data, and
#     onnx_generated_exclusions.txt's entries too (where that data contradicts v1.20.0's);
#  2. ONNX v1.20.0's own files at ../shared/onnx-backend-tests/node (or
#     $INFERLOOP_ONNX_BACKEND_TESTS), when that folder is there.
# Fails if a run fails; skipped (exit 77), saying why, only when neither copy is available.
set -u
bin="$1"; exclusions="$2"; python="${3:-}"; generated="${4:-}"
here="$(cd "$(dirname "$0")/../.." && pwd)"
suite="${INFERLOOP_ONNX_BACKEND_TESTS:-$here/../shared/onnx-backend-tests/node}"
ran=0; rc=0; why=()
if [ -n "$python" ] && [ -x "$python" ] && "$python" -c "import onnx" 2>/dev/null; then
  "$python" "$here/tests/conformance/generate_onnx_node_tests.py" "$generated" \
    --cases "$here/tests/conformance/onnx_node_cases.txt" || exit 1
  echo "== generated suite: $generated ($(head -1 "$generated/.generated")) =="
  cat "$exclusions" "$here/tests/conformance/onnx_generated_exclusions.txt" > "$generated.exclusions.txt" || exit 1
  "$bin" test-onnx "$generated" --exclusions "$generated.exclusions.txt" || rc=1
  ran=1
else
  why+=("no Python with onnx at '${python}' to generate the suite (scripts/setup_venv.sh)")
fi
if [ -d "$suite" ]; then
  echo "== ONNX v1.20.0 suite: $suite =="
  "$bin" test-onnx "$suite" --exclusions "$exclusions" || rc=1
  ran=1
else
  why+=("ONNX backend tests not found at $suite (set INFERLOOP_ONNX_BACKEND_TESTS)")
fi
if [ "$ran" = 0 ]; then
  echo "SKIPPED: ${why[0]}; ${why[1]}"
  exit 77
fi
for w in ${why[@]+"${why[@]}"}; do echo "note: only one copy of the suite ran: $w"; done
exit $rc
