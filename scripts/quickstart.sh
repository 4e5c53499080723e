#!/bin/bash
# The main job on a fresh machine: install dependencies, build, and serve the example models that
# ship in examples/model_repository (tiny_cnn, an image classifier; simple, an int32 add/sub) over
# KServe v2 REST (port 8000), gRPC (8001) and Prometheus metrics (8002), on 127.0.0.1.
# Stop with Ctrl-C (or SIGTERM): in-flight requests are answered, then it exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh --target inferloop  # the server alone: no tests or fuzzers
cat <<'MSG'
Serving examples/model_repository. Try, from another shell:
  curl -s localhost:8000/v2/health/ready -o /dev/null -w '%{http_code}\n'
  curl -s localhost:8000/v2/models/simple
  curl -s -X POST localhost:8000/v2/models/simple/infer -d '{"inputs":[
    {"name":"INPUT0","datatype":"INT32","shape":[1,16],"data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]},
    {"name":"INPUT1","datatype":"INT32","shape":[1,16],"data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}'
  curl -s localhost:8002/metrics | grep inferloop_request
MSG
exec build/inferloop serve --model-repository examples/model_repository "$@"
