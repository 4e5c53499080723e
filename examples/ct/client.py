#!/usr/bin/env python3
"""Sends a DICOM series to the CT analysis pipeline (examples/ct) and prints its report.

    .venv/bin/python examples/ct/client.py SERIES_DIR [--url localhost:8000] [--grpc] [--overlay OUT.png]

Every *.dcm file of SERIES_DIR goes in one request (file order does not matter: the server sorts
the slices by ImagePositionPatient). Prints the report JSON: the lesions with their volumes in
mm³, centroids, bounding boxes, and the stages (model, version, ms); --overlay writes the PNG of
the slice through the largest lesion.
"""
import argparse
import json
import os

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("series")
    ap.add_argument("--url", default=None, help="host:port (default localhost:8000, or :8001 with --grpc)")
    ap.add_argument("--grpc", action="store_true")
    ap.add_argument("--overlay", default=None)
    args = ap.parse_args()
    if args.grpc:
        import tritonclient.grpc as client
    else:
        import tritonclient.http as client
    url = args.url or ("localhost:8001" if args.grpc else "localhost:8000")
    blobs = []
    for name in sorted(os.listdir(args.series)):
        if name.endswith(".dcm"):
            with open(os.path.join(args.series, name), "rb") as f:
                blobs.append(f.read())
    if not blobs:
        raise SystemExit(f"no .dcm files in {args.series}")
    inp = client.InferInput("DICOM_FILES", [len(blobs)], "BYTES")
    inp.set_data_from_numpy(np.array(blobs, dtype=np.object_))
    c = client.InferenceServerClient(url, network_timeout=600.0) if not args.grpc else client.InferenceServerClient(url)
    r = c.infer("ct_analysis", [inp], timeout=600) if args.grpc else c.infer("ct_analysis", [inp])
    print(json.dumps(json.loads(r.as_numpy("REPORT")[0]), indent=1))
    if args.overlay:
        with open(args.overlay, "wb") as f:
            f.write(r.as_numpy("OVERLAY_PNG")[0])


if __name__ == "__main__":
    main()
