#!/bin/bash
# Runs the ONNX backend node tests with inferloop test-onnx.
# Usage: run_onnx_backend.sh INFERLOOP_BINARY EXCLUSIONS_FILE
# The suite lives outside the repository, at ../shared/onnx-backend-tests/node (or
# $INFERLOOP_ONNX_BACKEND_TESTS). Without it the test is skipped (exit 77), saying why.
set -u
bin="$1"; exclusions="$2"
here="$(cd "$(dirname "$0")/../.." && pwd)"
suite="${INFERLOOP_ONNX_BACKEND_TESTS:-$here/../shared/onnx-backend-tests/node}"
if [ ! -d "$suite" ]; then
  echo "SKIPPED: ONNX backend tests not found at $suite (set INFERLOOP_ONNX_BACKEND_TESTS)"
  exit 77
fi
exec "$bin" test-onnx "$suite" --exclusions "$exclusions"
