"""Makes the example models shipped in examples/ (random init, fixed seed).

    .venv/bin/python scripts/make_example_models.py

tiny_cnn: a small image classifier (Conv-BN-Relu-MaxPool x2, Flatten, Gemm, Softmax) on 1x28x28
images, batch dimension symbolic. Writes the model, one input, and ONNX Runtime's output for that
input (examples/data/tiny_cnn/expected_probs.npy), which the tests compare inferloop against.

simple: Triton's "simple" example shape: INPUT0, INPUT1 int32[batch,16] -> OUTPUT0 = INPUT0 + INPUT1,
OUTPUT1 = INPUT0 - INPUT1, with a config.pbtxt using dynamic batching (what `inferloop serve`
examples in README.md and docs/SERVING.md call).
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tiny_cnn(rng):
    def init(name, arr):
        return numpy_helper.from_array(arr.astype(np.float32), name)

    inits = [
        init("conv1_w", rng.normal(0, 0.3, (8, 1, 3, 3))),
        init("conv1_b", rng.normal(0, 0.1, (8,))),
        init("bn1_scale", rng.uniform(0.5, 1.5, (8,))),
        init("bn1_bias", rng.normal(0, 0.1, (8,))),
        init("bn1_mean", rng.normal(0, 0.1, (8,))),
        init("bn1_var", rng.uniform(0.5, 1.5, (8,))),
        init("conv2_w", rng.normal(0, 0.2, (16, 8, 3, 3))),
        init("conv2_b", rng.normal(0, 0.1, (16,))),
        init("fc_w", rng.normal(0, 0.1, (10, 16 * 7 * 7))),
        init("fc_b", rng.normal(0, 0.1, (10,))),
    ]
    nodes = [
        helper.make_node("Conv", ["image", "conv1_w", "conv1_b"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "bn1_scale", "bn1_bias", "bn1_mean", "bn1_var"], ["b1"]),
        helper.make_node("Relu", ["b1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "conv2_w", "conv2_b"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("MaxPool", ["r2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p2"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "tiny_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 1, 28, 28])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 10])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="inferloop-examples")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


SIMPLE_CONFIG = """# simple: INPUT0, INPUT1 int32[N,16] -> OUTPUT0 = sum, OUTPUT1 = difference.
name: "simple"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [
  { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]
dynamic_batching { }
"""


def simple():
    io = lambda n: helper.make_tensor_value_info(n, TensorProto.INT32, ["batch", 16])  # noqa: E731
    graph = helper.make_graph(
        [helper.make_node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"]), helper.make_node("Sub", ["INPUT0", "INPUT1"], ["OUTPUT1"])],
        "simple", [io("INPUT0"), io("INPUT1")], [io("OUTPUT0"), io("OUTPUT1")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="inferloop-examples")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    sdir = os.path.join(ROOT, "examples/model_repository/simple")
    os.makedirs(os.path.join(sdir, "1"), exist_ok=True)
    onnx.save(simple(), os.path.join(sdir, "1", "model.onnx"))
    with open(os.path.join(sdir, "config.pbtxt"), "w") as f:
        f.write(SIMPLE_CONFIG)
    rng = np.random.default_rng(20261129)
    model = tiny_cnn(rng)
    mdir = os.path.join(ROOT, "examples/model_repository/tiny_cnn/1")
    os.makedirs(mdir, exist_ok=True)
    onnx.save(model, os.path.join(mdir, "model.onnx"))
    ddir = os.path.join(ROOT, "examples/data/tiny_cnn")
    os.makedirs(ddir, exist_ok=True)
    # A "digit-like" input: a bright vertical stroke on a dark background, batch of 2.
    image = np.zeros((2, 1, 28, 28), np.float32)
    image[0, 0, 4:24, 13:15] = 1.0
    image[1, 0, 6:22, 8:20] = rng.uniform(0, 1, (16, 12))
    np.save(os.path.join(ddir, "image.npy"), image)
    import onnxruntime as ort
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (probs,) = sess.run(None, {"image": image})
    np.save(os.path.join(ddir, "expected_probs.npy"), probs)
    print("wrote", mdir, ddir, "onnxruntime", ort.__version__)


if __name__ == "__main__":
    main()
