"""Mirrors onnxruntime.capi for scripts that import exception types from there."""
from . import onnxruntime_pybind11_state  # noqa: F401
