#!/bin/bash
# The main job on a fresh machine: install dependencies, build, and run the example model that
# ships in examples/ (a small image classifier), printing its outputs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
exec build/inferloop run examples/model_repository/tiny_cnn/1/model.onnx \
  --input image=examples/data/tiny_cnn/image.npy --output-dir build/example_outputs
