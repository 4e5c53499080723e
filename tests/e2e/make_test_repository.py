"""Writes the model repository the `inferloop serve` end-to-end tests use (ONNX models built with
the onnx helper API, and their config.pbtxt files).

Usage: make_test_repository.py OUT_DIR [--big-mb N]

Models:
  simple      INPUT0, INPUT1 int32[-1,16] -> OUTPUT0 = sum, OUTPUT1 = difference (Triton's "simple");
              dynamic batching, max_batch_size 8.
  all_types   one Identity per KServe v2 datatype (no batching, 1-D inputs of any length).
  slow        X float32[-1,16], N int64[-1,1] -> Y: X through N rounds of Tanh(X @ W) (a Loop),
              so a request's cost is chosen by its N; max_batch_size 1, two priority levels,
              queue policy with timeout override and a bounded queue.
  big         X float32[-1,1024] @ W float32[1024, big_mb MiB / 4 KiB] (memory tests; explicit load).
  nobatch     like simple without config.pbtxt (the server completes the config from the model).
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 17)]


def save(model, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    onnx.checker.check_model(model)
    onnx.save(model, path)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def simple_model(batch_dim="batch"):
    g = helper.make_graph(
        [helper.make_node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"]), helper.make_node("Sub", ["INPUT0", "INPUT1"], ["OUTPUT1"])],
        "simple",
        [helper.make_tensor_value_info("INPUT0", TensorProto.INT32, [batch_dim, 16]),
         helper.make_tensor_value_info("INPUT1", TensorProto.INT32, [batch_dim, 16])],
        [helper.make_tensor_value_info("OUTPUT0", TensorProto.INT32, [batch_dim, 16]),
         helper.make_tensor_value_info("OUTPUT1", TensorProto.INT32, [batch_dim, 16])])
    return helper.make_model(g, opset_imports=OPSET)


SIMPLE_CONFIG = """name: "simple"
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
dynamic_batching { max_queue_delay_microseconds: 2000 }
instance_group [ { count: 2 kind: KIND_CPU } ]
"""

# (v2 name, ONNX type, config type)
ALL_TYPES = [("FP32", TensorProto.FLOAT), ("FP64", TensorProto.DOUBLE), ("FP16", TensorProto.FLOAT16),
             ("INT8", TensorProto.INT8), ("INT16", TensorProto.INT16), ("INT32", TensorProto.INT32),
             ("INT64", TensorProto.INT64), ("UINT8", TensorProto.UINT8), ("UINT16", TensorProto.UINT16),
             ("UINT32", TensorProto.UINT32), ("UINT64", TensorProto.UINT64), ("BOOL", TensorProto.BOOL),
             ("BYTES", TensorProto.STRING)]


def all_types_model():
    nodes, ins, outs = [], [], []
    for name, t in ALL_TYPES:
        nodes.append(helper.make_node("Identity", [f"IN_{name}"], [f"OUT_{name}"]))
        ins.append(helper.make_tensor_value_info(f"IN_{name}", t, ["n"]))
        outs.append(helper.make_tensor_value_info(f"OUT_{name}", t, ["n"]))
    return helper.make_model(helper.make_graph(nodes, "all_types", ins, outs), opset_imports=OPSET)


def slow_model():
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((16, 16)) * 0.25).astype(np.float32)
    body = helper.make_graph(
        [helper.make_node("MatMul", ["x_in", "W"], ["xw"]), helper.make_node("Tanh", ["xw"], ["x_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_in", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_out", TensorProto.FLOAT, ["batch", 16])],
        [numpy_helper.from_array(w, "W")])
    nodes = [
        helper.make_node("ReduceMax", ["N"], ["n_scalar"], keepdims=0),
        helper.make_node("Constant", [], ["cond"], value=numpy_helper.from_array(np.array(True), "cond")),
        helper.make_node("Loop", ["n_scalar", "cond", "X"], ["Y"], body=body),
    ]
    g = helper.make_graph(
        nodes, "slow",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", 16]),
         helper.make_tensor_value_info("N", TensorProto.INT64, ["batch", 1])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", 16])])
    return helper.make_model(g, opset_imports=OPSET)


SLOW_CONFIG = """name: "slow"
max_batch_size: 1
input [
  { name: "X" data_type: TYPE_FP32 dims: [ 16 ] },
  { name: "N" data_type: TYPE_INT64 dims: [ 1 ] }
]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 16 ] } ]
dynamic_batching {
  priority_levels: 2
  default_priority_level: 2
  default_queue_policy { max_queue_size: 16 allow_timeout_override: true }
}
instance_group [ { count: 1 } ]
model_warmup [ {
  name: "one_round" batch_size: 1
  inputs { key: "X" value: { data_type: TYPE_FP32 dims: [ 16 ] zero_data: true } }
  inputs { key: "N" value: { data_type: TYPE_INT64 dims: [ 1 ] zero_data: true } }
} ]
"""


def big_model(mb):
    cols = max(1, mb * 1024 * 1024 // (4 * 1024))
    w = np.random.default_rng(1).standard_normal((1024, cols)).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["Y"])], "big",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", 1024])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", cols])],
        [numpy_helper.from_array(w, "W")])
    return helper.make_model(g, opset_imports=OPSET)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--big-mb", type=int, default=96)
    a = ap.parse_args()
    save(simple_model(), f"{a.out}/simple/1/model.onnx")
    write(f"{a.out}/simple/config.pbtxt", SIMPLE_CONFIG)
    save(all_types_model(), f"{a.out}/all_types/1/model.onnx")
    write(f"{a.out}/all_types/config.pbtxt", 'name: "all_types"\nmax_batch_size: 0\n')
    save(slow_model(), f"{a.out}/slow/1/model.onnx")
    write(f"{a.out}/slow/config.pbtxt", SLOW_CONFIG)
    save(big_model(a.big_mb), f"{a.out}/big/1/model.onnx")
    write(f"{a.out}/big/config.pbtxt", 'name: "big"\nmax_batch_size: 4\n')
    save(simple_model(), f"{a.out}/nobatch/1/model.onnx")


if __name__ == "__main__":
    main()
