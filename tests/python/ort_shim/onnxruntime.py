"""`import onnxruntime` that gives inferloop: put this folder first on sys.path (PYTHONPATH) to run
a script written for ONNX Runtime on inferloop unchanged (tests/python/test_inferloop_ort_api.py
runs bench/ort_bench.py this way)."""
import sys

import inferloop

sys.modules[__name__] = inferloop
