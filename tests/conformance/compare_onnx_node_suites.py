#!/usr/bin/env python3
"""Compares two copies of the ONNX backend node tests, e.g. the suite generated from the pinned
onnx package (generate_onnx_node_tests.py) against ../shared/onnx-backend-tests/node (ONNX 1.20.0).

  compare_onnx_node_suites.py A_DIR B_DIR [--list]

For the cases in both: each file (model.onnx, test_data_set_*/input_*.pb, output_*.pb) is
identical bytes, or else decoded and compared: the models' graphs (nodes, inputs, outputs,
initializers) and opset imports, the data files' arrays (same dtype and shape, equal values,
NaN equal to NaN, or within rtol 1e-6 / atol 1e-7: "close"). Prints the counts (cases only in A,
only in B, in both: identical, same when decoded, close, different) and, with --list, the names.
Exit status 0 (a report, not a check).
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def case_files(case_dir):
    out = []
    for root, _, files in os.walk(case_dir):
        for f in files:
            out.append(os.path.relpath(os.path.join(root, f), case_dir))
    return sorted(out)


def decode_value(data):
    """Arrays of a .pb value file (TensorProto, SequenceProto, OptionalProto or MapProto)."""
    t = onnx.TensorProto()
    try:
        t.ParseFromString(data)
        if t.data_type != 0:
            return [numpy_helper.to_array(t)]
    except Exception:
        pass
    for proto, conv in ((onnx.SequenceProto(), numpy_helper.to_list),
                        (onnx.OptionalProto(), numpy_helper.to_optional),
                        (onnx.MapProto(), numpy_helper.to_dict)):
        try:
            proto.ParseFromString(data)
            v = conv(proto)
            if isinstance(v, dict):
                return [np.asarray(list(v.keys())), *[np.asarray(x) for x in v.values()]]
            if isinstance(v, list):
                return [np.asarray(x) for x in v]
            return [] if v is None else [np.asarray(v)]
        except Exception:
            continue
    return None


def compare_arrays(a, b):
    """'same', 'close' or 'different'."""
    if a is None or b is None or len(a) != len(b):
        return "different"
    verdict = "same"
    for x, y in zip(a, b):
        if x.dtype != y.dtype or x.shape != y.shape:
            return "different"
        if x.dtype.kind in "fc":
            if np.array_equal(x, y, equal_nan=True):
                continue
            if np.allclose(x, y, rtol=1e-6, atol=1e-7, equal_nan=True):
                verdict = "close"
                continue
            return "different"
        if not np.array_equal(x, y):
            return "different"
    return verdict


def compare_models(a, b):
    ma, mb = onnx.ModelProto(), onnx.ModelProto()
    ma.ParseFromString(a)
    mb.ParseFromString(b)
    oa = sorted((o.domain, o.version) for o in ma.opset_import)
    ob = sorted((o.domain, o.version) for o in mb.opset_import)
    if oa != ob:
        return "different"
    ga, gb = ma.graph, mb.graph
    for field in ("node", "input", "output", "initializer", "sparse_initializer"):
        if [x.SerializeToString(deterministic=True) for x in getattr(ga, field)] != \
           [x.SerializeToString(deterministic=True) for x in getattr(gb, field)]:
            return "different"
    return "same"


def compare_case(a_dir, b_dir):
    """'identical', 'same' (decoded equal), 'close' or 'different', and the reason."""
    fa, fb = case_files(a_dir), case_files(b_dir)
    if fa != fb:
        return "different", "file lists differ"
    verdict = "identical"
    for f in fa:
        da = open(os.path.join(a_dir, f), "rb").read()
        db = open(os.path.join(b_dir, f), "rb").read()
        if da == db:
            continue
        v = compare_models(da, db) if f.endswith(".onnx") else compare_arrays(decode_value(da), decode_value(db))
        if v == "different":
            return "different", f
        if v == "close" or verdict == "identical":
            verdict = v if verdict != "close" else "close"
    return verdict, ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    ca = {d for d in os.listdir(args.a) if os.path.isdir(os.path.join(args.a, d))}
    cb = {d for d in os.listdir(args.b) if os.path.isdir(os.path.join(args.b, d))}
    groups = {"identical": [], "same": [], "close": [], "different": []}
    for c in sorted(ca & cb):
        v, why = compare_case(os.path.join(args.a, c), os.path.join(args.b, c))
        groups[v].append((c, why))
    print(f"cases: {len(ca)} in {args.a}, {len(cb)} in {args.b}; {len(ca - cb)} only in the first, "
          f"{len(cb - ca)} only in the second, {len(ca & cb)} in both")
    print(f"in both: {len(groups['identical'])} identical files, {len(groups['same'])} same when decoded, "
          f"{len(groups['close'])} close (rtol 1e-6), {len(groups['different'])} different")
    if args.list:
        for c in sorted(ca - cb):
            print(f"only in first: {c}")
        for c in sorted(cb - ca):
            print(f"only in second: {c}")
        for k in ("close", "different"):
            for c, why in groups[k]:
                print(f"{k}: {c}" + (f" ({why})" if why else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
