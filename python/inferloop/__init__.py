"""inferloop: an ONNX inference engine. Its Python API is ONNX Runtime's (inferloop.session):

    import inferloop as onnxruntime
    sess = onnxruntime.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
    outputs = sess.run(None, {"input": x})
"""
# NotImplemented (an unsupported operator) is in inferloop.capi.onnxruntime_pybind11_state only,
# as in onnxruntime: at the top level it would shadow the builtin under `from inferloop import *`.
from ._inferloop import Fail, InferloopError, InvalidArgument, NoSuchFile
from ._inferloop import __version__
from .session import (
    ExecutionMode,
    GraphOptimizationLevel,
    InferenceSession,
    ModelMetadata,
    NodeArg,
    RunOptions,
    SessionOptions,
    get_all_providers,
    get_available_providers,
    get_device,
)
from . import capi  # noqa: F401  (inferloop.capi.onnxruntime_pybind11_state, as in onnxruntime)

version = __version__

__all__ = [
    "ExecutionMode", "Fail", "GraphOptimizationLevel", "InferenceSession", "InferloopError", "InvalidArgument",
    "ModelMetadata", "NoSuchFile", "NodeArg", "RunOptions", "SessionOptions", "__version__",
    "get_all_providers", "get_available_providers", "get_device",
]
