"""Writes a serialized ModelInferRequest exactly as tritonclient.grpc builds it (the frontends
tests decode it with inferloop's own proto/grpc_service.proto, which checks the field numbers).
Run with tritonclient[grpc] and numpy installed:  python3 make_tritonclient_grpc_request.py
Inputs as in make_tritonclient_bodies.py (every datatype but BF16), raw_input_contents."""
import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.grpc import _utils

from make_tritonclient_bodies import DTYPES, value

inputs = []
for dtype in DTYPES:
    inp = grpcclient.InferInput("IN_" + dtype, [2, 3], dtype)
    inp.set_data_from_numpy(value(dtype))
    inputs.append(inp)
outputs = [grpcclient.InferRequestedOutput("OUT0"), grpcclient.InferRequestedOutput("OUT1")]
request = _utils._get_inference_request(
    model_name="simple", inputs=inputs, model_version="2", request_id="req-1", outputs=outputs,
    sequence_id=0, sequence_start=False, sequence_end=False, priority=3, timeout=None,
    parameters=None)
with open("tritonclient_grpc_request.pb", "wb") as f:
    f.write(request.SerializeToString())

# A response built with tritonclient's own generated messages, as a server would send it:
# OUT0 FP32 [2,3] = 0..5 and OUT1 BYTES [2,3] as above, in raw_output_contents.
from tritonclient.grpc import service_pb2
from tritonclient.utils import serialize_byte_tensor

response = service_pb2.ModelInferResponse(model_name="simple", model_version="2", id="req-1")
for name, dtype in (("OUT0", "FP32"), ("OUT1", "BYTES")):
    out = response.outputs.add(name=name, datatype=dtype, shape=[2, 3])
    arr = value(dtype)
    raw = serialize_byte_tensor(arr).item() if dtype == "BYTES" else arr.tobytes()
    response.raw_output_contents.append(raw)
with open("tritonclient_grpc_response.pb", "wb") as f:
    f.write(response.SerializeToString())
