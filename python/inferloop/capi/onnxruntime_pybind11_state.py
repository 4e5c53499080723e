"""The exception names of onnxruntime.capi.onnxruntime_pybind11_state, for scripts that catch them.
Each is an inferloop.InferloopError (a RuntimeError) carrying the engine's message."""
from .._inferloop import Fail, InferloopError, InvalidArgument, NoSuchFile, NotImplemented  # noqa: F401,A004

RuntimeException = Fail
InvalidGraph = InvalidArgument
