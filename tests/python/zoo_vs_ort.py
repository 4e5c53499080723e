"""Every zoo model (bench/make_zoo.py: ResNet-50, MobileNetV2, BERT, DLRM, 3D U-Net) through the
inferloop Python package and onnxruntime's, the same script driving both, on the zoo's saved inputs.

    PYTHONPATH=<installed inferloop> .venv/bin/python tests/python/zoo_vs_ort.py [--zoo DIR]

(ctest python_zoo_vs_ort: tests/python/build_and_test.py --tests zoo_vs_ort.py.) The zoo is made
with Debian's PyTorch (`/usr/bin/python3 bench/make_zoo.py`, needs python3-torch), which the
project's set-up does not install: without zoo models the test reports itself skipped (exit 77,
ctest SKIPPED with the reason), never passed. INFERLOOP_ZOO_DIR or --zoo overrides bench/models.
"""
import os
import sys
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from test_inferloop_ort_api import TestModelsAgainstOrt  # noqa: E402  (compare: both modules, outputs checked)

ZOO = os.environ.get("INFERLOOP_ZOO_DIR", os.path.join(REPO, "bench", "models"))


class ZooVsOrt(TestModelsAgainstOrt):
    def test_zoo_models(self):
        # The float zoo only: bench/make_qdq_models.py's INT8 copies (<name>_qdq, _qdq7, _dyn) differ
        # from ORT's INT8 run by rounding steps that add up over a deep network, not by float
        # tolerance; tests/e2e/test_qdq.py and bench/quant_bench.py check those.
        names = sorted(d for d in os.listdir(ZOO) if os.path.exists(os.path.join(ZOO, d, "model.onnx"))
                       and not d.endswith(("_qdq", "_qdq7", "_dyn"))) if os.path.isdir(ZOO) else []
        if not names:
            self.skipTest(f"no zoo models in {ZOO} (/usr/bin/python3 bench/make_zoo.py makes them; needs python3-torch)")
        print(f"\nzoo models in {ZOO}: {', '.join(names)}", flush=True)
        for name in names:
            with self.subTest(zoo=name):
                folder = os.path.join(ZOO, name, "inputs_b1")
                feeds = {f[:-4]: np.load(os.path.join(folder, f)) for f in os.listdir(folder)} \
                    if os.path.isdir(folder) else None
                self.compare(os.path.join(ZOO, name, "model.onnx"), rtol=1e-3, atol=1e-4, feeds=feeds)
                print(f"zoo model {name}: inferloop matches onnxruntime", flush=True)


def load_tests(loader, tests, pattern):
    return loader.loadTestsFromName("test_zoo_models", ZooVsOrt)


if __name__ == "__main__":
    if "--zoo" in sys.argv:
        i = sys.argv.index("--zoo")
        ZOO = os.path.abspath(sys.argv[i + 1])
        del sys.argv[i:i + 2]
    result = unittest.main(exit=False, verbosity=2).result
    if not result.wasSuccessful():
        sys.exit(1)
    sys.exit(77 if result.skipped else 0)
