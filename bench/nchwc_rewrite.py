"""Prototype of a channel-blocked layout pass (NCHW16c, docs/DNNL_KERNELS.md), for measuring what
keeping convolution chains blocked gains; the engine's optimizer does not run it (yet).

    .venv/bin/python bench/nchwc_rewrite.py IN.onnx OUT.onnx

IN is best an `inferloop optimize` output (FusedConv nodes). A float32 2-D/3-D Conv / FusedConv
with constant weights whose input is blocked, or all of whose consumers can take a blocked
tensor, becomes a FusedConv with layout NCHW16c (its output blocked; its input may stay plain,
so a network's first convolution needs no reorder), MaxPool / AveragePool /
GlobalAveragePool / GlobalMaxPool on a blocked input become the com.inferloop pools with that
layout, and Relu / Clip / Add / Mul / Sigmoid / LeakyRelu / HardSwish / HardSigmoid / Tanh whose
tensor inputs are all blocked with the same channel count stay as they are (they are elementwise,
so they work on the blocked storage; each maps zero padding to a finite value, which the next
convolution multiplies by zero weights). Any other consumer of a blocked tensor, and every graph
output, gets a ReorderFromNchwc in front; a blocked residual Z fed by a plain tensor gets a
ReorderToNchwc. Prints the node counts.
"""
import collections
import sys

import onnx
from onnx import helper

DOMAIN = "com.inferloop"
ELEMENTWISE = {"Relu", "Clip", "Add", "Mul", "Sigmoid", "LeakyRelu", "HardSwish", "HardSigmoid", "Tanh"}
POOLS = {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}


def rewrite(model):
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    elem_type = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        elem_type[vi.name] = vi.type.tensor_type.elem_type
    blocked = {}  # plain name -> (blocked name, channels)
    to_plain = {}  # plain name already restored by a ReorderFromNchwc
    to_blocked = {}  # plain name -> blocked copy made by ReorderToNchwc
    out_nodes = []

    def plain(name):
        if name not in blocked or name in to_plain:
            return name
        bname, ch = blocked[name]
        out_nodes.append(helper.make_node("ReorderFromNchwc", [bname], [name], domain=DOMAIN, channels=ch,
                                          name=name + "_from_nchwc"))
        to_plain[name] = True
        return name

    def as_blocked(name):
        if name in blocked:
            return blocked[name][0]
        if name not in to_blocked:
            to_blocked[name] = name + "__nchwc_in"
            out_nodes.append(helper.make_node("ReorderToNchwc", [name], [to_blocked[name]], domain=DOMAIN,
                                              name=name + "_to_nchwc"))
        return to_blocked[name]

    def mark(node, out, ch):
        bname = out + "__nchwc"
        blocked[out] = (bname, ch)
        node.output[0] = bname

    consumers = collections.defaultdict(list)
    for node in g.node:
        for i in node.input:
            consumers[i].append(node)
    graph_outputs = {o.name for o in g.output}

    def blockable_consumer(node):
        if node.domain not in ("", "ai.onnx", DOMAIN):
            return False
        return node.op_type in ("Conv", "FusedConv") or node.op_type in POOLS or node.op_type in ELEMENTWISE

    for node in g.node:
        is_conv = (node.op_type == "Conv" and node.domain in ("", "ai.onnx")) or (node.op_type == "FusedConv" and node.domain == DOMAIN)
        # Block a convolution when its input already is, or when every consumer of its output can
        # take the blocked tensor (otherwise the reorders cost more than they save).
        worth = node.input[0] in blocked or (
            node.output[0] not in graph_outputs and all(blockable_consumer(c) for c in consumers[node.output[0]]))
        if is_conv and worth and len(node.input) > 1 and node.input[1] in inits and len(inits[node.input[1]].dims) in (4, 5) \
                and inits[node.input[1]].data_type == onnx.TensorProto.FLOAT:
            ch = inits[node.input[1]].dims[0]
            node.domain, node.op_type = DOMAIN, "FusedConv"
            for a in list(node.attribute):
                if a.name == "layout":
                    node.attribute.remove(a)
            node.attribute.append(helper.make_attribute("layout", "NCHW16c"))
            if node.input[0] in blocked:
                node.input[0] = blocked[node.input[0]][0]
            if len(node.input) > 3 and node.input[3]:
                node.input[3] = as_blocked(node.input[3])
            mark(node, node.output[0], ch)
            out_nodes.append(node)
            continue
        if node.op_type in POOLS and node.domain in ("", "ai.onnx") and node.input[0] in blocked and len(node.output) == 1:
            bname, ch = blocked[node.input[0]]
            node.domain = DOMAIN
            node.input[0] = bname
            node.attribute.append(helper.make_attribute("layout", "NCHW16c"))
            mark(node, node.output[0], ch)
            out_nodes.append(node)
            continue
        if node.op_type in ELEMENTWISE and node.domain in ("", "ai.onnx") and node.input[0] in blocked:
            ch = blocked[node.input[0]][1]
            tensor_inputs = node.input[:1] if node.op_type == "Clip" else node.input
            if all(i in blocked and blocked[i][1] == ch for i in tensor_inputs):
                for k, i in enumerate(tensor_inputs):
                    node.input[k] = blocked[i][0]
                mark(node, node.output[0], ch)
                out_nodes.append(node)
                continue
        for k, i in enumerate(node.input):
            if i:
                node.input[k] = plain(i)
        out_nodes.append(node)
    for o in g.output:
        plain(o.name)
    del g.node[:]
    g.node.extend(out_nodes)
    if not any(op.domain == DOMAIN for op in model.opset_import):
        model.opset_import.append(helper.make_opsetid(DOMAIN, 1))
    return model


def main():
    model = onnx.load(sys.argv[1])
    before = collections.Counter((n.domain + ":" if n.domain else "") + n.op_type for n in model.graph.node)
    rewrite(model)
    after = collections.Counter((n.domain + ":" if n.domain else "") + n.op_type for n in model.graph.node)
    for op in sorted(set(before) | set(after)):
        print(f"{op:40s} {before[op]:5d} {after[op]:5d}")
    onnx.save(model, sys.argv[2])


if __name__ == "__main__":
    main()
