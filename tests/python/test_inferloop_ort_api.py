"""The inferloop Python package against ONNX Runtime's Python API (python/inferloop).

    PYTHONPATH=<installed inferloop> .venv/bin/python tests/python/test_inferloop_ort_api.py [-v] [Class...]

(tests/python/build_and_test.py builds and installs the package first; ctest python_package.)
Compares inferloop with onnxruntime, the same script driving both modules, on:
  - the example models (examples/), the serve tests' models (tests/e2e/make_test_repository.py),
  - every ONNX backend node case of ../shared/onnx-backend-tests/node that the conformance suite
    runs (tests/conformance/onnx_backend_exclusions.txt), against the cases' expected outputs,
(the zoo models of bench/make_zoo.py: tests/python/zoo_vs_ort.py, ctest python_zoo_vs_ort)
and checks the API surface, numpy in/out without copies, bad input (a clear exception each),
8 Python threads on one session, and bench/ort_bench.py run unchanged through `import onnxruntime`
resolving to inferloop (tests/python/ort_shim).
"""
import gc
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import unittest

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import inferloop

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BACKEND_NODE = os.path.join(os.path.dirname(REPO), "shared", "onnx-backend-tests", "node")
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
import make_test_repository  # noqa: E402

OPSET = [helper.make_opsetid("", 17)]
CPU = ["CPUExecutionProvider"]


def model_bytes(nodes, inputs, outputs, initializers=(), **kw):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(g, opset_imports=OPSET, **kw).SerializeToString()


def relu_model(shape=("N", 4)):
    return model_bytes([helper.make_node("Relu", ["x"], ["y"])],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))])


def assert_same(tc, got, want, what, rtol=1e-4, atol=1e-5):
    if isinstance(want, list):
        tc.assertIsInstance(got, list, what)
        tc.assertEqual(len(got), len(want), what)
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(tc, g, w, f"{what}[{i}]", rtol, atol)
        return
    if want is None:
        tc.assertIsNone(got, what)
        return
    want = np.asarray(want)
    tc.assertIsInstance(got, np.ndarray, what)
    tc.assertEqual(got.shape, want.shape, what)
    if want.dtype.kind in "OUS":
        norm = lambda a: [v.decode() if isinstance(v, bytes) else str(v) for v in a.ravel()]  # noqa: E731
        tc.assertEqual(norm(got), norm(want), what)
        return
    tc.assertEqual(got.dtype, want.dtype, what)
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


NP_TYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
            "tensor(int8)": np.int8, "tensor(uint8)": np.uint8, "tensor(int16)": np.int16,
            "tensor(uint16)": np.uint16, "tensor(int32)": np.int32, "tensor(uint32)": np.uint32,
            "tensor(int64)": np.int64, "tensor(uint64)": np.uint64, "tensor(bool)": np.bool_}


def make_feeds(session, rng, batch=1):
    """Inputs for every input of an ORT-API session: symbolic / unknown dim 0 = batch, others 3."""
    feeds = {}
    for i in session.get_inputs():
        shape = [d if isinstance(d, int) else (batch if k == 0 else 3) for k, d in enumerate(i.shape)]
        if i.type == "tensor(string)":
            feeds[i.name] = np.array(["a", "bc"] * (int(np.prod(shape)) // 2 + 1), dtype=object)[:int(np.prod(shape))].reshape(shape)
            continue
        dt = NP_TYPES[i.type]
        if np.issubdtype(dt, np.floating):
            feeds[i.name] = rng.standard_normal(shape).astype(dt)
        else:
            feeds[i.name] = rng.integers(0, 2 if dt == np.bool_ else 4, shape).astype(dt)
    return feeds


def both(model, **kw):
    """(inferloop session, onnxruntime session) of one model (path or bytes)."""
    return inferloop.InferenceSession(model, providers=CPU, **kw), ort.InferenceSession(model, providers=CPU, **kw)


class TestApiSurface(unittest.TestCase):
    def test_version_is_cmakes(self):
        with open(os.path.join(REPO, "CMakeLists.txt")) as f:
            want = re.search(r"project\(inferloop VERSION ([0-9.]+)", f.read()).group(1)
        self.assertEqual(inferloop.__version__, want)

    def test_providers_device_enums(self):
        self.assertEqual(inferloop.get_available_providers(), ["CPUExecutionProvider"])
        self.assertEqual(inferloop.get_device(), "CPU")
        for name, member in ort.GraphOptimizationLevel.__members__.items():
            self.assertEqual(int(getattr(inferloop.GraphOptimizationLevel, name)), int(member), name)
        for name, member in ort.ExecutionMode.__members__.items():
            self.assertEqual(int(getattr(inferloop.ExecutionMode, name)), int(member), name)

    def test_session_options_defaults_as_ort(self):
        mine, theirs = inferloop.SessionOptions(), ort.SessionOptions()
        for field in ("intra_op_num_threads", "inter_op_num_threads", "optimized_model_filepath", "log_severity_level",
                      "log_verbosity_level", "enable_cpu_mem_arena", "enable_profiling"):
            self.assertEqual(getattr(mine, field), getattr(theirs, field), field)
        self.assertEqual(int(mine.graph_optimization_level), int(theirs.graph_optimization_level))
        with self.assertRaises(AttributeError):
            mine.no_such_option = 1

    def test_exception_types(self):
        self.assertTrue(issubclass(inferloop.InferloopError, RuntimeError))
        from inferloop.capi import onnxruntime_pybind11_state as state
        for name in ("InvalidArgument", "NoSuchFile", "NotImplemented", "Fail"):
            self.assertTrue(issubclass(getattr(state, name), inferloop.InferloopError), name)
        self.assertIs(state.InvalidArgument, inferloop.InvalidArgument)
        self.assertIs(state.Fail, inferloop.Fail)
        self.assertIs(inferloop.NoSuchFile, state.NoSuchFile)
        ns = {}
        exec("from inferloop import *", ns)  # noqa: S102
        self.assertNotIn("NotImplemented", ns)  # the builtin stays the builtin

    def test_providers_argument(self):
        m = relu_model()
        inferloop.InferenceSession(m, providers=["CPUExecutionProvider"])
        inferloop.InferenceSession(m, providers=[("CPUExecutionProvider", {})])
        with self.assertWarnsRegex(UserWarning, "CUDAExecutionProvider"):
            s = inferloop.InferenceSession(m, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
        self.assertEqual(s.get_providers(), ["CPUExecutionProvider"])
        with self.assertRaises(TypeError):
            inferloop.InferenceSession(m, providers="CPUExecutionProvider")


class TestNodeArgsAndMetadata(unittest.TestCase):
    def check_same_args(self, model):
        mine, theirs = both(model)
        for get in ("get_inputs", "get_outputs"):
            a = [(n.name, n.type, n.shape) for n in getattr(mine, get)()]
            b = [(n.name, n.type, n.shape) for n in getattr(theirs, get)()]
            self.assertEqual(a, b, get)

    def test_symbolic_unknown_and_rankless_dims(self):
        self.check_same_args(model_bytes(
            [helper.make_node("Relu", ["x"], ["z"]), helper.make_node("Relu", ["y"], ["w"])],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, None),
             helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", None, 3])],
            [helper.make_tensor_value_info("z", TensorProto.FLOAT, None),
             helper.make_tensor_value_info("w", TensorProto.FLOAT, ["N", None, 3])]))

    def test_every_numpy_dtype(self):
        types = [TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.INT8, TensorProto.UINT8,
                 TensorProto.INT16, TensorProto.UINT16, TensorProto.INT32, TensorProto.UINT32, TensorProto.INT64,
                 TensorProto.UINT64, TensorProto.BOOL, TensorProto.STRING]
        nodes = [helper.make_node("Identity", [f"x{k}"], [f"y{k}"]) for k in range(len(types))]
        model = model_bytes(nodes, [helper.make_tensor_value_info(f"x{k}", t, [2, "n"]) for k, t in enumerate(types)],
                            [helper.make_tensor_value_info(f"y{k}", t, [2, "n"]) for k, t in enumerate(types)])
        self.check_same_args(model)
        mine, theirs = both(model)
        feeds = make_feeds(theirs, np.random.default_rng(0))
        for k, (a, b) in enumerate(zip(mine.run(None, feeds), theirs.run(None, feeds))):
            assert_same(self, a, b, f"y{k}")

    def test_modelmeta_as_ort(self):
        m = onnx.load_from_string(relu_model())
        m.producer_name, m.producer_version, m.domain, m.doc_string, m.model_version = "maker", "1.2", "dom", "about", 7
        m.graph.name, m.graph.doc_string = "the_graph", "graph doc"
        helper.set_model_props(m, {"author": "me", "licence": "none"})
        data = m.SerializeToString()
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.onnx")
            with open(path, "wb") as f:
                f.write(data)
            for source in (data, path):
                a, b = inferloop.InferenceSession(source).get_modelmeta(), ort.InferenceSession(source, providers=CPU).get_modelmeta()
                for field in ("producer_name", "graph_name", "domain", "description", "graph_description", "version",
                              "custom_metadata_map"):
                    self.assertEqual(getattr(a, field), getattr(b, field), field)


class TestModelsAgainstOrt(unittest.TestCase):
    def compare(self, model, rtol=1e-4, atol=1e-5, feeds=None, batch=1):
        mine, theirs = both(model)
        feeds = feeds or make_feeds(theirs, np.random.default_rng(7), batch)
        want = theirs.run(None, feeds)
        got = mine.run(None, feeds)
        names = [o.name for o in theirs.get_outputs()]
        for name, g, w in zip(names, got, want):
            assert_same(self, g, w, f"{model if isinstance(model, str) else 'model'}: {name}", rtol, atol)
        # A subset, in another order.
        if len(names) > 1:
            got = mine.run(names[::-1], feeds)
            for name, g, w in zip(names[::-1], got, want[::-1]):
                assert_same(self, g, w, name, rtol, atol)

    def test_example_models(self):
        models = ["examples/model_repository/tiny_cnn/1/model.onnx", "examples/model_repository/simple/1/model.onnx",
                  "examples/digits/model.onnx", "examples/inspection/model_repository/screen/1/model.onnx",
                  "examples/inspection/model_repository/fine/1/model.onnx",
                  "examples/ct/model_repository/lesion_unet/1/model.onnx"]
        for rel in models:
            with self.subTest(model=rel):
                self.compare(os.path.join(REPO, rel), batch=2)

    def test_serve_test_models(self):
        self.compare(make_test_repository.simple_model().SerializeToString(), batch=3)
        self.compare(make_test_repository.all_types_model().SerializeToString())
        slow = make_test_repository.slow_model().SerializeToString()
        rng = np.random.default_rng(3)
        self.compare(slow, feeds={"X": rng.standard_normal((2, 16)).astype(np.float32),
                                  "N": np.array([[3], [5]], np.int64)})



# Element types numpy has no dtype for (onnx hands them to Python as ml_dtypes arrays): cases
# using them are left to the C++ conformance runner.
NO_NUMPY_TYPE = {TensorProto.BFLOAT16, TensorProto.COMPLEX64, TensorProto.COMPLEX128, TensorProto.INT4, TensorProto.UINT4,
                 TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ, TensorProto.FLOAT8E5M2, TensorProto.FLOAT8E5M2FNUZ}
for extra in ("FLOAT4E2M1", "FLOAT8E8M0", "INT2", "UINT2"):
    if hasattr(TensorProto, extra):
        NO_NUMPY_TYPE.add(getattr(TensorProto, extra))


def elem_types(type_proto):
    which = type_proto.WhichOneof("value")
    if which == "tensor_type":
        return [type_proto.tensor_type.elem_type]
    if which == "sequence_type":
        return elem_types(type_proto.sequence_type.elem_type)
    if which == "optional_type":
        return elem_types(type_proto.optional_type.elem_type)
    return [None]  # maps and others


def read_value(path, type_proto):
    with open(path, "rb") as f:
        data = f.read()
    which = type_proto.WhichOneof("value")
    if which == "sequence_type":
        seq = onnx.SequenceProto()
        seq.ParseFromString(data)
        return [numpy_helper.to_array(t) for t in seq.tensor_values]
    if which == "optional_type":
        opt = onnx.OptionalProto()
        opt.ParseFromString(data)
        if opt.HasField("tensor_value"):
            return numpy_helper.to_array(opt.tensor_value)
        if opt.HasField("sequence_value"):
            return [numpy_helper.to_array(t) for t in opt.sequence_value.tensor_values]
        return None
    t = onnx.TensorProto()
    t.ParseFromString(data)
    return numpy_helper.to_array(t)


def conformance_rules():
    rules = {}
    with open(os.path.join(REPO, "tests", "conformance", "onnx_backend_exclusions.txt")) as f:
        for line in f:
            line = line.split("#")[0].split()
            if len(line) >= 2:
                rules[line[0]] = line[1:]
    return rules


class TestConformanceCases(unittest.TestCase):
    """Every backend node case the C++ conformance runner runs, through the Python API."""

    def test_backend_node_cases(self):
        self.assertTrue(os.path.isdir(BACKEND_NODE), f"{BACKEND_NODE} is missing (shared/ beside the repository)")
        rules = conformance_rules()
        ran, numpy_less, failures = 0, 0, []
        for case in sorted(os.listdir(BACKEND_NODE)):
            rule = rules.get(case, [])
            if "skip" in rule:
                continue
            tol = dict(r.split("=") for r in rule if "=" in r)
            rtol, atol = float(tol.get("rtol", 1e-3)), float(tol.get("atol", 1e-7))
            folder = os.path.join(BACKEND_NODE, case)
            model = onnx.load(os.path.join(folder, "model.onnx"), load_external_data=False)
            graph_inputs = {i.name: i for i in model.graph.input}
            types = [t for v in list(model.graph.input) + list(model.graph.output) for t in elem_types(v.type)]
            if any(t in NO_NUMPY_TYPE or t is None for t in types):
                numpy_less += 1
                continue
            sess = inferloop.InferenceSession(os.path.join(folder, "model.onnx"))
            names = [i.name for i in sess.get_inputs()]
            for data_set in sorted(d for d in os.listdir(folder) if d.startswith("test_data_set")):
                d = os.path.join(folder, data_set)
                n_in = len([f for f in os.listdir(d) if f.startswith("input_")])
                n_out = len([f for f in os.listdir(d) if f.startswith("output_")])
                feeds = {}
                declared = [i.name for i in model.graph.input if i.name in names or len(names) == len(model.graph.input)]
                for k in range(n_in):
                    name = declared[k] if k < len(declared) else model.graph.input[k].name
                    feeds[name] = read_value(os.path.join(d, f"input_{k}.pb"), graph_inputs[name].type)
                want = [read_value(os.path.join(d, f"output_{k}.pb"), model.graph.output[k].type) for k in range(n_out)]
                try:
                    got = sess.run(None, feeds)
                    for k, (g, w) in enumerate(zip(got, want)):
                        assert_same(self, g, w, f"{case} output {k}", rtol, atol)
                except (AssertionError, inferloop.InferloopError) as e:
                    failures.append(f"{case}/{data_set}: {str(e).splitlines()[0][:300]}")
                ran += 1
        print(f"\nbackend node cases through the Python API: {ran} data sets ran, {len(failures)} failed, "
              f"{numpy_less} cases left out (a type numpy lacks)", flush=True)
        self.assertGreater(ran, 1000)
        self.assertEqual(failures, [])


class TestNumpyWithoutCopies(unittest.TestCase):
    def test_contiguous_feed_read_in_place_outputs_handed_over(self):
        s = inferloop.InferenceSession(relu_model())
        x = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
        (y,) = s.run(None, {"x": x})
        self.assertEqual(s.copy_counts(), {"inputs_viewed": 1, "inputs_copied": 0, "outputs_wrapped": 1, "outputs_copied": 0})
        self.assertFalse(y.flags.owndata)  # numpy does not own it: the engine's buffer, through a capsule
        self.assertTrue(y.flags.writeable and y.flags.c_contiguous)
        y[:] = 5  # the caller's own: writing it changes nothing in the session
        np.testing.assert_array_equal(s.run(None, {"x": x})[0], np.maximum(x, 0))

    def test_strided_and_unaligned_feeds_are_copied(self):
        s = inferloop.InferenceSession(relu_model())
        x = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32)
        (y,) = s.run(None, {"x": x.T})  # a transposed view: not C-contiguous
        np.testing.assert_array_equal(y, np.maximum(x.T, 0))
        raw = np.zeros(8 * 4 * 4 + 1, np.uint8)[1:].view(np.float32).reshape(8, 4)  # misaligned by one byte
        raw[:] = x.T
        self.assertFalse(raw.flags.aligned)
        np.testing.assert_array_equal(s.run(None, {"x": raw})[0], np.maximum(x.T, 0))
        (y,) = s.run(None, {"x": x.T.tolist()})  # a list: converted to the declared dtype
        np.testing.assert_array_equal(y, np.maximum(x.T, 0))
        self.assertEqual(s.copy_counts()["inputs_copied"], 3)
        self.assertEqual(s.copy_counts()["inputs_viewed"], 0)

    def test_outputs_never_alias_feeds_or_constants(self):
        c = numpy_helper.from_array(np.arange(4, dtype=np.float32).reshape(1, 4), "c")
        model = model_bytes([helper.make_node("Identity", ["x"], ["same"]), helper.make_node("Identity", ["c"], ["const"])],
                            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                            [helper.make_tensor_value_info("same", TensorProto.FLOAT, [1, 4]),
                             helper.make_tensor_value_info("const", TensorProto.FLOAT, [1, 4])], [c])
        s = inferloop.InferenceSession(model, sess_options=self.no_optimization())
        x = np.ones((1, 4), np.float32)
        same, const = s.run(None, {"x": x})
        self.assertFalse(np.shares_memory(same, x))
        same[:] = 9
        const[:] = 9
        np.testing.assert_array_equal(x, np.ones((1, 4), np.float32))
        np.testing.assert_array_equal(s.run(None, {"x": x})[1], np.arange(4, dtype=np.float32).reshape(1, 4))

    @staticmethod
    def no_optimization():
        so = inferloop.SessionOptions()
        so.graph_optimization_level = inferloop.GraphOptimizationLevel.ORT_DISABLE_ALL
        return so


class TestBadInput(unittest.TestCase):
    def setUp(self):
        self.s = inferloop.InferenceSession(relu_model())
        self.x = np.ones((2, 4), np.float32)

    def assert_error(self, exc_type, pattern, fn):
        with self.assertRaisesRegex(exc_type, pattern):
            fn()

    def test_wrong_dtype(self):
        self.assert_error(inferloop.InvalidArgument, "input 'x' expects dtype float32, got float64",
                          lambda: self.s.run(None, {"x": self.x.astype(np.float64)}))
        self.assert_error(inferloop.InvalidArgument, "numpy dtype complex64 has no ONNX tensor type",
                          lambda: self.s.run(None, {"x": self.x.astype(np.complex64)}))

    def test_wrong_rank_and_shape(self):
        self.assert_error(inferloop.InvalidArgument, "input 'x' expects rank 2", lambda: self.s.run(None, {"x": np.ones(4, np.float32)}))
        self.assert_error(inferloop.InvalidArgument, "dimension 1 must be 4", lambda: self.s.run(None, {"x": np.ones((2, 5), np.float32)}))

    def test_missing_and_unknown_feeds(self):
        self.assert_error(inferloop.InvalidArgument, "missing required input 'x'", lambda: self.s.run(None, {}))
        self.assert_error(inferloop.InvalidArgument, "unknown input 'nope'", lambda: self.s.run(None, {"x": self.x, "nope": self.x}))

    def test_unknown_output_name(self):
        self.assert_error(inferloop.InvalidArgument, "unknown output 'nope'", lambda: self.s.run(["nope"], {"x": self.x}))

    def test_wrong_argument_types(self):
        self.assert_error(TypeError, "output_names", lambda: self.s.run("y", {"x": self.x}))
        self.assert_error(TypeError, "input names", lambda: self.s.run(None, {1: self.x}))
        self.assert_error(inferloop.InvalidArgument, "is not an array", lambda: self.s.run(None, {"x": object()}))
        self.assert_error(TypeError, "Unable to load", lambda: inferloop.InferenceSession(42))

    def test_bad_models(self):
        self.assert_error(inferloop.NoSuchFile, "/no/such/model.onnx", lambda: inferloop.InferenceSession("/no/such/model.onnx"))
        self.assert_error(inferloop.InvalidArgument, "", lambda: inferloop.InferenceSession(b"\x08\x07garbage"))
        unsupported = model_bytes([helper.make_node("NoSuchOp", ["x"], ["y"], domain="ai.onnx")],
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
        from inferloop.capi.onnxruntime_pybind11_state import NotImplemented as Unsupported  # noqa: A004
        with self.assertRaises(Unsupported) as e:
            inferloop.InferenceSession(unsupported)
        self.assertIn("NoSuchOp", str(e.exception))

    def test_closed_session(self):
        self.s.close()
        self.assert_error(inferloop.Fail, "the session is closed", lambda: self.s.run(None, {"x": self.x}))
        self.s.close()  # twice is fine
        with inferloop.InferenceSession(relu_model()) as s:
            s.run(None, {"x": self.x})
        self.assert_error(inferloop.Fail, "the session is closed", lambda: s.run(None, {"x": self.x}))

    def test_close_and_delete_while_threads_run(self):
        s = inferloop.InferenceSession(relu_model())
        errors, results = [], []

        def work():
            for _ in range(300):
                try:
                    results.append(s.run(None, {"x": self.x})[0].sum())
                except inferloop.Fail as e:
                    errors.append(str(e))
                    return

        pool = [threading.Thread(target=work) for _ in range(4)]
        for t in pool:
            t.start()
        s.close()
        for t in pool:
            t.join()
        self.assertTrue(all(r == 8.0 for r in results))
        self.assertTrue(all("closed" in e for e in errors))
        s2 = inferloop.InferenceSession(relu_model())
        run = s2.run
        del s2
        gc.collect()
        self.assertEqual(run(None, {"x": self.x})[0].sum(), 8.0)  # a bound method keeps its session


class TestThreads(unittest.TestCase):
    def test_eight_threads_one_session(self):
        w = numpy_helper.from_array(np.random.default_rng(5).standard_normal((64, 64)).astype(np.float32), "w")
        model = model_bytes([helper.make_node("MatMul", ["x", "w"], ["y"]), helper.make_node("Tanh", ["y"], ["z"])],
                            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
                            [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N", 64])], [w])
        s, ref = both(model)
        inputs = [np.random.default_rng(k).standard_normal((k + 1, 64)).astype(np.float32) for k in range(8)]
        want = [ref.run(None, {"x": x})[0] for x in inputs]
        errors = []

        def work(k):
            try:
                for _ in range(50):
                    assert_same(self, s.run(None, {"x": inputs[k]})[0], want[k], f"thread {k}")
            except Exception as e:  # noqa: BLE001 (reported below)
                errors.append(f"thread {k}: {e!r}")

        pool = [threading.Thread(target=work, args=(k,)) for k in range(8)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        self.assertEqual(errors, [])


class TestSessionOptions(unittest.TestCase):
    def test_threads_levels_and_optimized_model(self):
        path = os.path.join(REPO, "examples/model_repository/tiny_cnn/1/model.onnx")
        ref = ort.InferenceSession(path, providers=CPU)
        feeds = make_feeds(ref, np.random.default_rng(2), 2)
        want = ref.run(None, feeds)
        with tempfile.TemporaryDirectory() as d:
            for level in inferloop.GraphOptimizationLevel:
                so = inferloop.SessionOptions()
                so.intra_op_num_threads = 1
                so.log_severity_level = 3
                so.graph_optimization_level = level
                so.optimized_model_filepath = os.path.join(d, f"opt_{int(level)}.onnx")
                s = inferloop.InferenceSession(path, sess_options=so)
                self.assertEqual(s._sess.intra_op_threads, 1)
                self.assertIs(s.get_session_options(), so)
                assert_same(self, s.run(None, feeds)[0], want[0], str(level))
                written = inferloop.InferenceSession(so.optimized_model_filepath)  # loads and runs the same
                assert_same(self, written.run(None, feeds)[0], want[0], f"written at {level}")
                onnx.load(so.optimized_model_filepath)
            plain = onnx.load(os.path.join(d, "opt_0.onnx"))
            fused = onnx.load(os.path.join(d, "opt_99.onnx"))
            self.assertLess(len(fused.graph.node), len(plain.graph.node))
            self.assertTrue(any(n.domain == "com.inferloop" for n in fused.graph.node))

    def test_precision_entry(self):
        so = inferloop.SessionOptions()
        so.add_session_config_entry("inferloop.precision", "fp32")
        self.assertEqual(inferloop.InferenceSession(relu_model(), so)._sess.precision, "fp32")
        so.add_session_config_entry("inferloop.precision", "fp64")
        with self.assertRaisesRegex(inferloop.InvalidArgument, "fp64"):
            inferloop.InferenceSession(relu_model(), so)


class TestOrtScripts(unittest.TestCase):
    """The project's own ONNX Runtime scripts in bench/, unchanged, with `import onnxruntime`
    resolving to inferloop (tests/python/ort_shim/onnxruntime.py first on PYTHONPATH)."""

    def run_ort_bench(self, out_dir, shim):
        env = dict(os.environ)
        if shim:
            env["PYTHONPATH"] = os.path.join(HERE, "ort_shim") + os.pathsep + env.get("PYTHONPATH", "")
        model = os.path.join(REPO, "examples/model_repository/tiny_cnn/1/model.onnx")
        p = subprocess.run([sys.executable, os.path.join(REPO, "bench", "ort_bench.py"), model, "--batch", "2",
                            "--threads", "1", "-n", "3", "-w", "1", "--save-outputs", out_dir],
                           env=env, capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout.strip().splitlines()[-1])

    def test_ort_bench(self):
        with tempfile.TemporaryDirectory() as d:
            mine = self.run_ort_bench(os.path.join(d, "inferloop"), True)
            theirs = self.run_ort_bench(os.path.join(d, "ort"), False)
            self.assertEqual(mine["engine"], "onnxruntime " + inferloop.__version__)  # it ran on inferloop
            self.assertEqual(theirs["engine"], "onnxruntime " + ort.__version__)
            self.assertEqual(mine["batch"], 2)
            files = sorted(os.listdir(os.path.join(d, "ort")))
            self.assertEqual(sorted(os.listdir(os.path.join(d, "inferloop"))), files)
            for f in files:
                assert_same(self, np.load(os.path.join(d, "inferloop", f)), np.load(os.path.join(d, "ort", f)), f)
        print(f"\nbench/ort_bench.py through inferloop: p50 {mine['p50_ms']} ms (onnxruntime {theirs['p50_ms']} ms)", flush=True)

    def test_ct_pipeline_reference_inference(self):
        """bench/ct_pipeline_reference.py's ort_runner + blend_windows (its sliding-window stage),
        with its `import onnxruntime` given inferloop, against the same code on onnxruntime."""
        sys.path.insert(0, os.path.join(REPO, "bench"))
        try:
            import ct_pipeline_reference as ct
        finally:
            sys.path.pop(0)
        model = os.path.join(REPO, "examples/ct/model_repository/lesion_unet/1/model.onnx")
        volume = np.clip(np.random.default_rng(4).standard_normal((40, 70, 70)).astype(np.float32), -5, 5)
        saved = sys.modules["onnxruntime"]
        sys.modules["onnxruntime"] = inferloop
        try:
            mine = ct.ort_runner(model, 1)
        finally:
            sys.modules["onnxruntime"] = saved
        theirs = ct.ort_runner(model, 1)
        prob, windows = ct.blend_windows(volume, (32, 64, 64), 0.25, mine, 2)
        want, _ = ct.blend_windows(volume, (32, 64, 64), 0.25, theirs, 2)
        self.assertEqual(windows, 8)
        assert_same(self, prob, want, "lesion probability", rtol=1e-3, atol=1e-5)


if __name__ == "__main__":
    unittest.main()
