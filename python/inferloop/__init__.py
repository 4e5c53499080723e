"""inferloop: an ONNX inference engine. Its Python API is ONNX Runtime's (inferloop.session):

    import inferloop as onnxruntime
    sess = onnxruntime.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
    outputs = sess.run(None, {"input": x})
"""
import os as _os

# libgomp (the OpenMP runtime the engine's threads run on) spins idle workers for up to
# GOMP_SPINCOUNT iterations; next to other busy processes that collapses 2-thread runs (see
# src/cli/omp_spin_limit.h, where the CLI does the same). It reads the variable once, when it is
# loaded: this takes effect when nothing imported before inferloop loaded libgomp already.
if "GOMP_SPINCOUNT" not in _os.environ and "OMP_WAIT_POLICY" not in _os.environ:
    _os.environ["GOMP_SPINCOUNT"] = "10000"

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
from .llm import LLM, Generation
from .tools import compare, quantize
from . import capi  # noqa: F401  (inferloop.capi.onnxruntime_pybind11_state, as in onnxruntime)

version = __version__

__all__ = [
    "ExecutionMode", "Fail", "Generation", "GraphOptimizationLevel", "InferenceSession", "InferloopError",
    "InvalidArgument", "LLM", "ModelMetadata", "NoSuchFile", "NodeArg", "RunOptions", "SessionOptions",
    "__version__", "compare", "get_all_providers", "get_available_providers", "get_device", "quantize",
]
