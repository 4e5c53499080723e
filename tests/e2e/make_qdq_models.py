"""Small QDQ (QuantizeLinear / DequantizeLinear) models for the INT8 execution tests (test_qdq.py).

    .venv/bin/python tests/e2e/make_qdq_models.py OUT_DIR

Writes OUT_DIR/<name>.onnx and OUT_DIR/<name>_input/<input>.npy for each model, and
OUT_DIR/models.txt listing the names. Two sources:
  - built here with the onnx helper, following the QDQ convention of docs/QUANTIZATION.md
    (uint8 activations per tensor, int8 weights per channel or per tensor, int32 bias): h_*;
  - float models quantized by onnxruntime.quantization.quantize_static (QDQ format, uint8
    activations, int8 weights, per channel and per tensor, MinMax on 8 random samples): ort_*;
    and by quantize_dynamic (DynamicQuantizeLinear -> MatMulInteger format): ort_dyn_*.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(7)
OPSET = [helper.make_opsetid("", 17)]


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


class Builder:
    """Accumulates nodes and initializers of one QDQ graph."""

    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def fresh(self, base):
        self.n += 1
        return f"{base}_{self.n}"

    def qdq(self, x, scale, zp, dtype=np.uint8):
        """Q then DQ of activation x; returns the DQ output name and the Q output name."""
        s, z = self.fresh("s"), self.fresh("zp")
        self.inits += [const(s, np.float32(scale)), const(z, np.array(zp, dtype=dtype))]
        q, d = self.fresh("q"), self.fresh("dq")
        self.nodes += [helper.make_node("QuantizeLinear", [x, s, z], [q]),
                       helper.make_node("DequantizeLinear", [q, s, z], [d])]
        return d, q

    def weight(self, w, axis, per_channel=True):
        """int8 symmetric weight through a DQ; returns (DQ output, scales)."""
        if per_channel:
            red = tuple(i for i in range(w.ndim) if i != axis)
            scale = np.maximum(np.abs(w).max(axis=red), 1e-6) / 127.0
            shape = [1] * w.ndim
            shape[axis] = -1
            wq = np.clip(np.round(w / scale.reshape(shape)), -127, 127).astype(np.int8)
        else:
            scale = np.float32(max(np.abs(w).max(), 1e-6) / 127.0)
            wq = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
        scale = np.asarray(scale, dtype=np.float32)
        n = self.fresh("w")
        self.inits += [const(n + "_q", wq), const(n + "_s", scale), const(n + "_zp", np.zeros(scale.shape, np.int8))]
        d = n + "_dq"
        self.nodes.append(helper.make_node("DequantizeLinear", [n + "_q", n + "_s", n + "_zp"], [d], axis=axis))
        return d, scale

    def bias(self, b, x_scale, w_scale):
        s = (np.float32(x_scale) * w_scale).astype(np.float32)
        n = self.fresh("b")
        bq = np.round(b / s).astype(np.int32)
        self.inits += [const(n + "_q", bq), const(n + "_s", s), const(n + "_zp", np.zeros(s.shape, np.int32))]
        self.nodes.append(helper.make_node("DequantizeLinear", [n + "_q", n + "_s", n + "_zp"], [n], axis=0))
        return n

    def model(self, name, inputs, outputs):
        g = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        m = helper.make_model(g, opset_imports=OPSET)
        m.ir_version = 8
        return m


def vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def conv_block(b, x_dq, x_scale, cin, cout, k, relu=True, per_channel=True, pads=1, stride=1, y_scale=0.05, y_zp=0,
               quantize_out=True, group=1):
    w = RNG.standard_normal((cout, cin // group, k, k)).astype(np.float32) * 0.2
    wd, ws = b.weight(w, 0, per_channel)
    bias = b.bias(RNG.standard_normal(cout).astype(np.float32) * 0.1, x_scale, ws if per_channel else np.full(cout, ws, np.float32))
    c = b.fresh("conv")
    b.nodes.append(helper.make_node("Conv", [x_dq, wd, bias], [c], pads=[pads] * 4, strides=[stride] * 2, group=group))
    if relu:
        r = b.fresh("relu")
        b.nodes.append(helper.make_node("Relu", [c], [r]))
        c = r
    if not quantize_out:
        return c, None
    d, _ = b.qdq(c, y_scale, y_zp)
    return d, y_scale


def hand_models():
    models = {}
    shape = [1, 8, 12, 12]

    # Conv + Relu, per-channel weights, asymmetric input zero point, padding.
    for pc in (True, False):
        b = Builder()
        xd, _ = b.qdq("x", 0.03, 128)
        y, _ = conv_block(b, xd, 0.03, 8, 16, 3, per_channel=pc)
        b.nodes.append(helper.make_node("Identity", [y], ["y"]))
        models["h_conv_relu_" + ("pc" if pc else "pt")] = (b.model("conv", [vi("x", shape)], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]), {"x": shape})

    # Conv with float output (no Q after it), strided, grouped.
    b = Builder()
    xd, _ = b.qdq("x", 0.03, 100)
    y, _ = conv_block(b, xd, 0.03, 8, 8, 3, relu=False, stride=2, quantize_out=False, group=2)
    b.nodes.append(helper.make_node("Identity", [y], ["y"]))
    models["h_conv_float_out"] = (b.model("convf", [vi("x", shape)], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]), {"x": shape})

    # Residual block: conv-relu, conv, Add(conv, input) -> Relu -> QDQ; max pool; global average pool.
    b = Builder()
    xd, _ = b.qdq("x", 0.03, 128)
    a, _ = conv_block(b, xd, 0.03, 8, 16, 3, y_scale=0.04)
    p = b.fresh("pool")
    b.nodes.append(helper.make_node("MaxPool", [a], [p], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    pd, _ = b.qdq(p, 0.04, 0)
    c1, _ = conv_block(b, pd, 0.04, 16, 16, 3, y_scale=0.05)
    c2, _ = conv_block(b, c1, 0.05, 16, 16, 1, relu=False, pads=0, y_scale=0.06, y_zp=128)
    add = b.fresh("add")
    b.nodes.append(helper.make_node("Add", [c2, pd], [add]))
    r = b.fresh("relu")
    b.nodes.append(helper.make_node("Relu", [add], [r]))
    rd, _ = b.qdq(r, 0.05, 0)
    gap = b.fresh("gap")
    b.nodes.append(helper.make_node("GlobalAveragePool", [rd], [gap]))
    gd, _ = b.qdq(gap, 0.02, 0)
    fl = b.fresh("flat")
    b.nodes.append(helper.make_node("Flatten", [gd], [fl], axis=1))
    fd, _ = b.qdq(fl, 0.02, 0)
    w = RNG.standard_normal((10, 16)).astype(np.float32) * 0.3
    wd, ws = b.weight(w, 0)
    bias = b.bias(RNG.standard_normal(10).astype(np.float32) * 0.1, 0.02, ws)
    g = b.fresh("gemm")
    b.nodes.append(helper.make_node("Gemm", [fd, wd, bias], [g], transB=1))
    yd, _ = b.qdq(g, 0.03, 128)
    b.nodes.append(helper.make_node("Identity", [yd], ["y"]))
    models["h_resnet_block"] = (b.model("block", [vi("x", shape)], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]), {"x": shape})

    # MatMul with constant [K, N] weights (per-channel axis 1) on a rank-3 input, then Relu -> QDQ.
    b = Builder()
    xd, _ = b.qdq("x", 0.02, 120)
    w = RNG.standard_normal((32, 24)).astype(np.float32) * 0.2
    wd, _ = b.weight(w, 1)
    m = b.fresh("mm")
    b.nodes.append(helper.make_node("MatMul", [xd, wd], [m]))
    r = b.fresh("relu")
    b.nodes.append(helper.make_node("Relu", [m], [r]))
    yd, _ = b.qdq(r, 0.03, 0)
    b.nodes.append(helper.make_node("Identity", [yd], ["y"]))
    models["h_matmul_relu"] = (b.model("mm", [vi("x", [2, 5, 32])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]), {"x": [2, 5, 32]})

    # MatMul -> Q -> DQ -> Add(float bias), the layout of ORT's QDQ transformer projections.
    b = Builder()
    xd, _ = b.qdq("x", 0.02, 120)
    w = RNG.standard_normal((32, 24)).astype(np.float32) * 0.2
    wd, _ = b.weight(w, 1)
    m = b.fresh("mm")
    b.nodes.append(helper.make_node("MatMul", [xd, wd], [m]))
    md, _ = b.qdq(m, 0.04, 130)
    b.inits.append(const("bias", (RNG.standard_normal(24) * 0.5).astype(np.float32)))
    b.nodes.append(helper.make_node("Add", ["bias", md], ["y"]))
    models["h_matmul_dq_bias"] = (b.model("mmb", [vi("x", [2, 5, 32])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]), {"x": [2, 5, 32]})
    return models


def float_cnn():
    """Conv+Relu, AveragePool, MaxPool, two branches Concat, conv, residual Add, GAP, Flatten, Gemm."""
    inits, nodes = [], []

    def w(name, shape, scale=0.2):
        inits.append(const(name, (RNG.standard_normal(shape) * scale).astype(np.float32)))
        return name

    nodes.append(helper.make_node("Conv", ["x", w("w1", (16, 3, 3, 3)), w("b1", (16,), 0.1)], ["c1"], pads=[1] * 4))
    nodes.append(helper.make_node("Relu", ["c1"], ["r1"]))
    nodes.append(helper.make_node("AveragePool", ["r1"], ["a1"], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1]))
    nodes.append(helper.make_node("MaxPool", ["a1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]))
    nodes.append(helper.make_node("Conv", ["p1", w("w2", (8, 16, 1, 1)), w("b2", (8,), 0.1)], ["c2"]))
    nodes.append(helper.make_node("Relu", ["c2"], ["r2"]))
    nodes.append(helper.make_node("Conv", ["p1", w("w3", (8, 16, 3, 3)), w("b3", (8,), 0.1)], ["c3"], pads=[1] * 4))
    nodes.append(helper.make_node("Relu", ["c3"], ["r3"]))
    nodes.append(helper.make_node("Concat", ["r2", "r3"], ["cat"], axis=1))
    nodes.append(helper.make_node("Conv", ["cat", w("w4", (16, 16, 3, 3), 0.1), w("b4", (16,), 0.1)], ["c4"], pads=[1] * 4))
    nodes.append(helper.make_node("Add", ["c4", "p1"], ["add"]))
    nodes.append(helper.make_node("Relu", ["add"], ["r4"]))
    nodes.append(helper.make_node("GlobalAveragePool", ["r4"], ["gap"]))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], axis=1))
    nodes.append(helper.make_node("Gemm", ["flat", w("wf", (10, 16)), w("bf", (10,), 0.1)], ["y"], transB=1))
    g = helper.make_graph(nodes, "cnn", [vi("x", [1, 3, 16, 16])], [vi("y", [1, 10])], inits)
    m = helper.make_model(g, opset_imports=OPSET)
    m.ir_version = 8
    return m, {"x": [1, 3, 16, 16]}


def float_mlp():
    """MatMul + Add(bias) + Relu, MatMul + Add(bias) on [2, 6, 32] (a transformer FFN)."""
    inits = [const("w1", (RNG.standard_normal((32, 48)) * 0.2).astype(np.float32)),
             const("b1", (RNG.standard_normal(48) * 0.1).astype(np.float32)),
             const("w2", (RNG.standard_normal((48, 16)) * 0.2).astype(np.float32)),
             const("b2", (RNG.standard_normal(16) * 0.1).astype(np.float32))]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"]), helper.make_node("Add", ["m1", "b1"], ["a1"]),
             helper.make_node("Relu", ["a1"], ["r1"]), helper.make_node("MatMul", ["r1", "w2"], ["m2"]),
             helper.make_node("Add", ["m2", "b2"], ["y"])]
    g = helper.make_graph(nodes, "mlp", [vi("x", [2, 6, 32])], [vi("y", [2, 6, 16])], inits)
    m = helper.make_model(g, opset_imports=OPSET)
    m.ir_version = 8
    return m, {"x": [2, 6, 32]}


def ort_models(out_dir):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self, shapes):
            self.it = iter([{k: RNG.standard_normal(s).astype(np.float32) for k, s in shapes.items()} for _ in range(8)])

        def get_next(self):
            return next(self.it, None)

    models = {}
    for base, (fm, shapes) in (("cnn", float_cnn()), ("mlp", float_mlp())):
        fpath = os.path.join(out_dir, f"float_{base}.onnx")
        onnx.save(fm, fpath)
        for pc in (True, False):
            name = f"ort_{base}_{'pc' if pc else 'pt'}"
            path = os.path.join(out_dir, name + ".onnx")
            quantize_static(fpath, path, Reader(shapes), quant_format=QuantFormat.QDQ, per_channel=pc,
                            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
            models[name] = (onnx.load(path), shapes)
    # ORT's dynamic format (DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul -> Add).
    from onnxruntime.quantization import quantize_dynamic
    for pc in (True, False):
        name = f"ort_dyn_mlp_{'pc' if pc else 'pt'}"
        path = os.path.join(out_dir, name + ".onnx")
        quantize_dynamic(os.path.join(out_dir, "float_mlp.onnx"), path, per_channel=pc, weight_type=QuantType.QInt8)
        models[name] = (onnx.load(path), float_mlp()[1])
    return models


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    models = hand_models()
    models.update(ort_models(out))
    for name, (m, shapes) in models.items():
        onnx.save(m, os.path.join(out, name + ".onnx"))
        d = os.path.join(out, name + "_input")
        os.makedirs(d, exist_ok=True)
        for k, s in shapes.items():
            np.save(os.path.join(d, k + ".npy"), RNG.standard_normal(s).astype(np.float32))
    with open(os.path.join(out, "models.txt"), "w") as f:
        f.write("\n".join(models) + "\n")


if __name__ == "__main__":
    main()
