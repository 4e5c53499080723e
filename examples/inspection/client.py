#!/usr/bin/env python3
"""Sends part images to the inspection pipeline (examples/inspection) and prints each verdict.

    .venv/bin/python examples/inspection/client.py IMAGE.jpg [IMAGE2.png ...] \
        [--url localhost:8000] [--grpc] [--overlay OUT.png]

One request per part (the cascade's conditions are per request). Prints one JSON line per part:
the file, the verdict report (verdict, values, stages with model versions and ms), and whether a
heatmap came back; with --overlay the PNG overlay of the last defective part is written there.
"""
import argparse
import json

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("images", nargs="+")
    ap.add_argument("--url", default=None, help="host:port (default localhost:8000, or :8001 with --grpc)")
    ap.add_argument("--grpc", action="store_true")
    ap.add_argument("--overlay", default=None, help="write the last defective part's overlay PNG here")
    args = ap.parse_args()
    if args.grpc:
        import tritonclient.grpc as client
    else:
        import tritonclient.http as client
    url = args.url or ("localhost:8001" if args.grpc else "localhost:8000")
    c = client.InferenceServerClient(url)
    for path in args.images:
        with open(path, "rb") as f:
            blob = f.read()
        inp = client.InferInput("IMAGE", [1, 1], "BYTES")
        inp.set_data_from_numpy(np.array([[blob]], dtype=np.object_))
        r = c.infer("inspection", [inp])
        report = json.loads(r.as_numpy("REPORT")[0, 0])
        overlay = r.as_numpy("OVERLAY_PNG")
        print(json.dumps({"file": path, "report": report, "heatmap": overlay is not None}))
        if overlay is not None and args.overlay:
            with open(args.overlay, "wb") as f:
                f.write(overlay[0, 0])


if __name__ == "__main__":
    main()
