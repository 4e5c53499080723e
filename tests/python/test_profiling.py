"""Profiling from Python as ONNX Runtime does it: SessionOptions.enable_profiling and
profile_file_prefix, InferenceSession.end_profiling() and get_profiling_start_time_ns().

    PYTHONPATH=<installed inferloop> .venv/bin/python tests/python/test_profiling.py [-v]

(tests/python/build_and_test.py builds and installs the package first; ctest python_package.)
The same script drives inferloop and onnxruntime on one small model: the file each end_profiling()
writes is a JSON array of Chrome trace events, with the same "Node" events (node names and op
types) in both, and inferloop's has one "Session" model_run event per run, from every thread.
"""
import json
import os
import re
import tempfile
import threading
import time
import unittest

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

import inferloop

# Node name -> op type of the model below.
NODES = {"mm": "MatMul", "bias": "Add", "act": "Relu", "tr": "Transpose", "sm": "Softmax", "sig": "Sigmoid"}


def small_model():
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 4], np.linspace(-1, 1, 16, dtype=np.float32))
    b = helper.make_tensor("b", TensorProto.FLOAT, [4], [0.1, -0.2, 0.3, -0.4])
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
             helper.make_node("Add", ["m", "b"], ["a"], name="bias"),
             helper.make_node("Relu", ["a"], ["r"], name="act"),
             helper.make_node("Transpose", ["r"], ["t"], name="tr", perm=[1, 0]),
             helper.make_node("Softmax", ["t"], ["s"], name="sm", axis=-1),
             helper.make_node("Sigmoid", ["s"], ["y"], name="sig")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 4])], [w, b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


MODEL = small_model()
FEED = {"x": np.arange(16, dtype=np.float32).reshape(4, 4) / 8}


def options(module, prefix=None, enable=True):
    so = module.SessionOptions()
    so.enable_profiling = enable
    # Node for node, as the model has them (inferloop's fusions rename op types: com.inferloop:...).
    so.graph_optimization_level = module.GraphOptimizationLevel.ORT_DISABLE_ALL
    if prefix is not None:
        so.profile_file_prefix = prefix
    return so


def events(path, cat, name=None):
    with open(path) as f:
        trace = json.load(f)
    return [e for e in trace if e["cat"] == cat and (name is None or e["name"] == name)]


class ProfilingTest(unittest.TestCase):
    def setUp(self):
        self._cwd = os.getcwd()
        self._tmp = tempfile.TemporaryDirectory(prefix="inferloop-profile-")
        os.chdir(self._tmp.name)  # end_profiling writes into the current folder

    def tearDown(self):
        os.chdir(self._cwd)
        self._tmp.cleanup()

    def test_default_prefix_and_file_name(self):
        self.assertEqual(ort.SessionOptions().profile_file_prefix, "onnxruntime_profile_")
        self.assertEqual(inferloop.SessionOptions().profile_file_prefix, "inferloop_profile_")
        names = {}  # module -> (prefix, file name)
        for module in (ort, inferloop):
            before = time.time_ns()
            sess = module.InferenceSession(MODEL, options(module), providers=["CPUExecutionProvider"])
            after = time.time_ns()
            start = sess.get_profiling_start_time_ns()
            self.assertTrue(before <= start <= after, f"{module.__name__}: start {start} not in [{before}, {after}]")
            sess.run(None, FEED)
            names[module.__name__] = (module.SessionOptions().profile_file_prefix, sess.end_profiling())
        for module, (prefix, name) in names.items():
            # ONNX Runtime's naming: <prefix>_<date>_<time>_<ms>.json, in the current folder.
            self.assertRegex(name, "^" + re.escape(prefix) + r"_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d_\d{3}\.json$", module)
            self.assertTrue(os.path.isfile(name), f"{module}: {name} not written in the current folder")

    def test_same_node_events_as_onnxruntime(self):
        runs = 3
        files = {}
        for module in (ort, inferloop):
            sess = module.InferenceSession(MODEL, options(module, "prof_" + module.__name__),
                                           providers=["CPUExecutionProvider"])
            for _ in range(runs):
                sess.run(None, FEED)
            files[module.__name__] = sess.end_profiling()
        mine, theirs = files["inferloop"], files["onnxruntime"]
        self.assertTrue(mine.startswith("prof_inferloop_"), mine)
        with open(mine) as f:
            trace = json.load(f)
        self.assertIsInstance(trace, list)
        for e in trace:
            self.assertEqual(e["ph"], "X", e)
            self.assertEqual(e["pid"], os.getpid(), e)
            self.assertGreaterEqual(e["dur"], 0, e)
        self.assertEqual(len(events(mine, "Session", "model_run")), runs)
        self.assertEqual(len(events(theirs, "Session", "model_run")), runs)
        nodes, ort_nodes = events(mine, "Node"), events(theirs, "Node")
        self.assertEqual(len(nodes), runs * len(NODES))
        self.assertEqual({e["args"]["op_name"] for e in nodes}, set(NODES.values()))
        self.assertEqual({e["args"]["op_name"] for e in nodes}, {e["args"]["op_name"] for e in ort_nodes})
        self.assertEqual({e["name"] for e in nodes}, {e["name"] for e in ort_nodes})
        for e in nodes:
            self.assertEqual(NODES[e["name"][:-len("_kernel_time")]], e["args"]["op_name"], e)
        print(f"\n  inferloop node kernel time per run: "
              f"{sum(e['dur'] for e in nodes) / runs:.1f} us; onnxruntime: "
              f"{sum(e['dur'] for e in ort_nodes if e['name'].endswith('_kernel_time')) / runs:.1f} us")

    def test_end_profiling_when_off(self):
        for module in (ort, inferloop):
            # Never enabled: "" and no file.
            sess = module.InferenceSession(MODEL, options(module, enable=False), providers=["CPUExecutionProvider"])
            sess.run(None, FEED)
            self.assertEqual(sess.end_profiling(), "", module.__name__)
            self.assertEqual(sess.get_profiling_start_time_ns(), 0, module.__name__)
            # Ended: a second end_profiling gives "" too, and later runs are not recorded.
            sess = module.InferenceSession(MODEL, options(module, "again"), providers=["CPUExecutionProvider"])
            sess.run(None, FEED)
            name = sess.end_profiling()
            self.assertNotEqual(name, "", module.__name__)
            sess.run(None, FEED)
            self.assertEqual(sess.end_profiling(), "", module.__name__)
            self.assertEqual(len(events(name, "Session", "model_run")), 1, module.__name__)
        self.assertEqual(sorted(os.listdir(".")), sorted(f for f in os.listdir(".") if f.startswith("again_")))

    def test_two_threads_profiling_at_once(self):
        per_thread = 25
        sess = inferloop.InferenceSession(MODEL, options(inferloop, "threads"))
        start = threading.Barrier(2)
        errors, tids = [], []

        def worker():
            try:
                start.wait()
                tids.append(threading.get_native_id())
                for _ in range(per_thread):
                    sess.run(None, FEED)
            except Exception as e:  # noqa: BLE001 (reported by the test)
                errors.append(e)

        threads = [threading.Thread(target=worker) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        name = sess.end_profiling()
        runs = events(name, "Session", "model_run")
        self.assertEqual(len(runs), 2 * per_thread)
        self.assertEqual(len(events(name, "Node")), 2 * per_thread * len(NODES))
        # The trace's tid is the thread that ran: each thread's runs on its own row.
        self.assertEqual(sorted({e["tid"] for e in runs}), sorted(tids))
        for tid in tids:
            self.assertEqual(sum(1 for e in runs if e["tid"] == tid), per_thread)

    def test_unwritable_prefix(self):
        sess = inferloop.InferenceSession(MODEL, options(inferloop, os.path.join("no_such_dir", "p")))
        sess.run(None, FEED)
        with self.assertRaises(inferloop.InferloopError) as cm:
            sess.end_profiling()
        self.assertIn("no_such_dir", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
