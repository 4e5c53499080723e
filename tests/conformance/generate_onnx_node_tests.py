#!/usr/bin/env python3
"""Writes the ONNX backend node tests (the operator conformance suite) from the test-case
generators that ship in the pinned `onnx` wheel (scripts/requirements-dev.txt), in the layout of
onnx/backend/test/data/node: OUT/<case>/model.onnx, OUT/<case>/test_data_set_0/{input,output}_K.pb.
Run with the project venv:

  .venv/bin/python tests/conformance/generate_onnx_node_tests.py OUT [--cases FILE]

--cases FILE: only the cases named in FILE (one a line, '#' comments), e.g.
onnx_node_cases.txt, the suite the exclusions were written against. OUT is made afresh; a file
OUT/.generated names the onnx version and case list, and when it already says the same, nothing
is written again. onnx's own `python -m onnx.backend.test.cmd_tools generate-data` writes only
the model tests (real/, simple/) in this version; this uses its writer on the node cases.
"""
import argparse
import contextlib
import io
import os
import shutil
import sys
import types
import warnings


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--cases")
    args = ap.parse_args()

    import onnx
    import onnx.backend.test.case.node as node_cases
    import onnx.backend.test.cmd_tools as cmd_tools

    wanted = None
    cases_text = ""
    if args.cases:
        with open(args.cases) as f:
            cases_text = f.read()
        wanted = {line.split("#")[0].strip() for line in cases_text.splitlines()} - {""}
    stamp = f"onnx {onnx.__version__}\n{cases_text}"
    stamp_path = os.path.join(args.out, ".generated")
    if os.path.exists(stamp_path) and open(stamp_path).read() == stamp:
        return 0

    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")  # the generators' own numpy warnings (inf from 1/0, ...)
        cases = node_cases.collect_testcases()
        if wanted is not None:
            missing = wanted - {c.name for c in cases}
            if missing:
                print(f"error: onnx {onnx.__version__} has no case {sorted(missing)[0]} "
                      f"({len(missing)} missing)", file=sys.stderr)
                return 1
            cases = [c for c in cases if c.name in wanted]
        tmp = args.out + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        # cmd_tools.generate_data writes OUTPUT/<kind>/<name>/...; kind is "node" for these.
        cmd_tools.model_test = types.SimpleNamespace(collect_testcases=lambda: cases)
        cmd_tools.generate_data(types.SimpleNamespace(output=tmp))
    shutil.rmtree(args.out, ignore_errors=True)
    os.rename(os.path.join(tmp, "node"), args.out)
    shutil.rmtree(tmp)
    with open(stamp_path, "w") as f:
        f.write(stamp)
    print(f"wrote {len(cases)} ONNX node test cases (onnx {onnx.__version__}) to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
