"""Small ONNX models and data for `inferloop compare` tests and docs (docs/QUANTIZATION.md).

    python tests/e2e/make_compare_models.py OUT_DIR

writes into OUT_DIR:
  ref.onnx        x[1,3,8,8] -> conv1 -> relu1 -> conv2 -> relu2 -> pool -> flat -> fc -> probs
  same.onnx       a byte-for-byte different file with the same weights (names, graph, values)
  perturbed.onnx  ref with conv2's weights changed (sign-flipped): outputs from 'conv2' on differ
  unsorted.onnx   ref with its nodes in reverse order (not topologically sorted)
  wide.onnx       ref with conv2 giving 6 channels (shapes differ from 'conv2' on)
  data/s0, data/s1            two samples: x.npy, normalized (per-channel mean ~0, std ~1)
  calibration/c0..c3          four samples drawn like data
  shifted/s0                  one sample whose channel 1 is off by +10 (a preprocessing mismatch)
  bad_shape/x.npy             x with shape [1,3,4,4]
  wrong_name/image.npy        a file no model input is named after
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build(w1, w2, w3, b3):
    c2 = w2.shape[0]
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["conv1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv1"], ["relu1"], name="relu1"),
        helper.make_node("Conv", ["relu1", "w2"], ["conv2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv2"], ["relu2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["relu2"], ["pool"], name="pool"),
        helper.make_node("Flatten", ["pool"], ["flat"], name="flat"),
        helper.make_node("Gemm", ["flat", "w3", "b3"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "compare_test",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 5])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2"),
         numpy_helper.from_array(w3, "w3"), numpy_helper.from_array(b3, "b3")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main(out):
    rng = np.random.default_rng(6)
    w1 = rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3
    w2 = rng.standard_normal((4, 4, 3, 3)).astype(np.float32) * 0.3
    w3 = rng.standard_normal((5, 4)).astype(np.float32)
    b3 = rng.standard_normal(5).astype(np.float32)
    os.makedirs(out, exist_ok=True)
    onnx.save(build(w1, w2, w3, b3), os.path.join(out, "ref.onnx"))
    same = build(w1, w2, w3, b3)
    same.producer_name = "copy"
    onnx.save(same, os.path.join(out, "same.onnx"))
    onnx.save(build(w1, -w2, w3, b3), os.path.join(out, "perturbed.onnx"))
    unsorted = build(w1, w2, w3, b3)
    nodes = list(unsorted.graph.node)
    del unsorted.graph.node[:]
    unsorted.graph.node.extend(reversed(nodes))  # not topologically sorted (ONNX requires it; inferloop sorts)
    onnx.save(unsorted, os.path.join(out, "unsorted.onnx"))
    w2w = rng.standard_normal((6, 4, 3, 3)).astype(np.float32) * 0.3
    w3w = rng.standard_normal((5, 6)).astype(np.float32)
    onnx.save(build(w1, w2w, w3w, b3), os.path.join(out, "wide.onnx"))

    def sample(d, shift=0.0):
        os.makedirs(d, exist_ok=True)
        x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
        x[:, 1] += shift
        np.save(os.path.join(d, "x.npy"), x)

    for i in range(2):
        sample(os.path.join(out, "data", f"s{i}"))
    for i in range(4):
        sample(os.path.join(out, "calibration", f"c{i}"))
    sample(os.path.join(out, "shifted", "s0"), shift=10.0)
    os.makedirs(os.path.join(out, "bad_shape"), exist_ok=True)
    np.save(os.path.join(out, "bad_shape", "x.npy"), np.zeros((1, 3, 4, 4), np.float32))
    os.makedirs(os.path.join(out, "wrong_name"), exist_ok=True)
    np.save(os.path.join(out, "wrong_name", "image.npy"), np.zeros((1, 3, 8, 8), np.float32))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_compare_models.py OUT_DIR")
    main(sys.argv[1])
