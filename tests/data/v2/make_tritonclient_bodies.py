"""Writes REST request bodies exactly as tritonclient.http builds them (the frontends tests
decode these). Run with tritonclient[http] and numpy installed:
    python3 make_tritonclient_bodies.py
Each case gives <name>.body and <name>.json_size (the Inference-Header-Content-Length, or 0).
Input k of dtype D holds [[0,1,2],[3,4,5]] cast to D (BOOL: k % 2; BYTES: the strings below)."""
import numpy as np
import tritonclient.http as httpclient

DTYPES = {"BOOL": np.bool_, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32,
          "UINT64": np.uint64, "INT8": np.int8, "INT16": np.int16, "INT32": np.int32,
          "INT64": np.int64, "FP16": np.float16, "FP32": np.float32, "FP64": np.float64,
          "BYTES": np.object_}
STRINGS = [b"a", b"bc", b"", b"def", b"x", "\u00e9t\u00e9".encode()]


def value(dtype):
    if dtype == "BYTES":
        return np.array(STRINGS, dtype=np.object_).reshape(2, 3)
    if dtype == "BOOL":
        return (np.arange(6) % 2).astype(np.bool_).reshape(2, 3)
    return np.arange(6).astype(DTYPES[dtype]).reshape(2, 3)


def write(name, binary_inputs):
    inputs = []
    for dtype in DTYPES:
        if not binary_inputs and dtype == "FP16":
            continue  # tritonclient sends FP16 only as binary
        inp = httpclient.InferInput("IN_" + dtype, [2, 3], dtype)
        inp.set_data_from_numpy(value(dtype), binary_data=binary_inputs)
        inputs.append(inp)
    outputs = [httpclient.InferRequestedOutput("OUT0", binary_data=True),
               httpclient.InferRequestedOutput("OUT1", binary_data=False)]
    body, json_size = httpclient.InferenceServerClient.generate_request_body(
        inputs, outputs=outputs, request_id="req-1")
    with open(name + ".body", "wb") as f:
        f.write(body if isinstance(body, bytes) else body.encode())
    with open(name + ".json_size", "w") as f:
        f.write(str(json_size or 0) + "\n")


if __name__ == "__main__":
    write("tritonclient_binary", True)
    write("tritonclient_json", False)
