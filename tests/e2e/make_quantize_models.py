"""Small ONNX models and data for `inferloop quantize` / `compare --sensitivity` tests and docs.

    python tests/e2e/make_quantize_models.py OUT_DIR

writes into OUT_DIR:
  cnn.onnx          x[N,3,8,8] -> conv1(+bias) -> relu -> maxpool -> conv2 -> relu -> conv3 -> add(residual)
                    -> relu -> global avg pool -> flatten -> fc (Gemm, transB=1) -> logits[N,10]
  cnn_outlier.onnx  the same function with conv2's channel 0 scaled by 5000 (and conv3's input channel 0
                    by 1/5000): per-tensor INT8 loses accuracy there (for mixed precision)
  mlp.onnx          x[N,16] -> MatMul+Add -> Relu -> MatMul -> Gemm (transB=1) -> logits[N,10]  (for --dynamic)
  calibration/x.npy a batch of 64 samples [64,3,8,8] (split along the symbolic batch dimension)
  eval/x.npy        200 samples; eval/labels.npy the FP32 model's top-1 class (so FP32 accuracy is 100%)
  samples/s0..s2    three one-sample folders (the folder-of-folders layout)
  mlp_calibration/x.npy, mlp_eval/x.npy   data for mlp.onnx
  empty/            an empty folder
  wrong_name/image.npy   a file no input is named after
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def cnn_inits(rng):
    def w(*shape, s=0.3):
        return (rng.standard_normal(shape) * s).astype(np.float32)

    return {"w1": w(8, 3, 3, 3), "b1": w(8, s=0.1), "w2": w(8, 8, 3, 3, s=0.15), "b2": w(8, s=0.1),
             "w3": w(8, 8, 3, 3, s=0.15), "w4": w(10, 8, s=0.5), "b4": w(10, s=0.1)}


def outlier(inits, k=5000.0):
    """The same function with conv2's output channel 0 scaled by k and conv3's input channel 0 by 1/k
    (Relu commutes with a positive scale): per-tensor INT8 of conv2's weights and of relu2's output
    then loses the other channels."""
    o = {n: v.copy() for n, v in inits.items()}
    o["w2"][0] *= k
    o["b2"][0] *= k
    o["w3"][:, 0] /= k
    return o


def cnn(inits):
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("Conv", ["r2", "w3"], ["c3"], name="conv3", pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c3", "p1"], ["a3"], name="add3"),
        helper.make_node("Relu", ["a3"], ["r3"], name="relu3"),
        helper.make_node("GlobalAveragePool", ["r3"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "w4", "b4"], ["logits"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes, "quantize_test_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def mlp(rng):
    def w(*shape, s=0.3):
        return (rng.standard_normal(shape) * s).astype(np.float32)

    inits = {"w1": w(16, 32), "b1": w(32, s=0.1), "w2": w(32, 24, s=0.2), "w3": w(10, 24, s=0.3), "b3": w(10, s=0.1)}
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["m1"], name="mm1"),
        helper.make_node("Add", ["m1", "b1"], ["a1"], name="bias1"),
        helper.make_node("Relu", ["a1"], ["r1"], name="relu1"),
        helper.make_node("MatMul", ["r1", "w2"], ["m2"], name="mm2"),
        helper.make_node("Gemm", ["m2", "w3", "b3"], ["logits"], name="fc", transB=1, alpha=0.5, beta=2.0),
    ]
    graph = helper.make_graph(
        nodes, "quantize_test_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def main(out):
    import onnxruntime as ort

    rng = np.random.default_rng(6)
    os.makedirs(out, exist_ok=True)
    inits = cnn_inits(rng)
    # Center the logits over random images so that the predicted classes vary (else one class wins
    # everywhere and top-1 accuracy cannot move).
    probe = rng.standard_normal((256, 3, 8, 8)).astype(np.float32)
    inits["w4"] *= 4
    y = ort.InferenceSession(cnn(inits).SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": probe})[0]
    inits["b4"] = (inits["b4"] * 4 - y.mean(axis=0)).astype(np.float32)
    onnx.save(cnn(inits), os.path.join(out, "cnn.onnx"))
    onnx.save(cnn(outlier(inits)), os.path.join(out, "cnn_outlier.onnx"))
    onnx.save(mlp(rng), os.path.join(out, "mlp.onnx"))

    def save(d, name, a):
        os.makedirs(os.path.join(out, d), exist_ok=True)
        np.save(os.path.join(out, d, name), a)

    def images(n):
        return rng.standard_normal((n, 3, 8, 8)).astype(np.float32)

    save("calibration", "x.npy", images(64))
    ev = images(200)
    save("eval", "x.npy", ev)
    sess = ort.InferenceSession(os.path.join(out, "cnn.onnx"), providers=["CPUExecutionProvider"])
    save("eval", "labels.npy", sess.run(None, {"x": ev})[0].argmax(axis=1).astype(np.int64))
    for i in range(3):
        save(os.path.join("samples", f"s{i}"), "x.npy", images(1))
    save("mlp_calibration", "x.npy", rng.standard_normal((32, 16)).astype(np.float32))
    save("mlp_eval", "x.npy", rng.standard_normal((100, 16)).astype(np.float32))
    os.makedirs(os.path.join(out, "empty"), exist_ok=True)
    save("wrong_name", "image.npy", images(2))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_quantize_models.py OUT_DIR")
    main(sys.argv[1])
