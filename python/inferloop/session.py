"""ONNX Runtime's Python inference API over inferloop's engine.

A script written for ``onnxruntime`` runs with ``import inferloop as onnxruntime``: InferenceSession,
SessionOptions, RunOptions, NodeArg, ModelMetadata, GraphOptimizationLevel, ExecutionMode,
get_available_providers() and get_device() behave as ONNX Runtime's do for the CPU provider.
"""
from __future__ import annotations

import datetime
import enum
import os
import time
import warnings
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from . import _inferloop

CPU_PROVIDER = "CPUExecutionProvider"


def get_available_providers() -> List[str]:
    """The execution providers this build has: only the CPU."""
    return [CPU_PROVIDER]


def get_all_providers() -> List[str]:
    return [CPU_PROVIDER]


def get_device() -> str:
    return "CPU"


class GraphOptimizationLevel(enum.IntEnum):
    """ONNX Runtime's levels, mapped onto inferloop's optimizer: DISABLE_ALL = none, BASIC = folding
    and clean-ups, EXTENDED / LAYOUT / ALL = every fusion (inferloop's level 2)."""
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """Accepted for compatibility: inferloop runs nodes in order, with intra-op threads."""
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


def _engine_level(level: Union[GraphOptimizationLevel, int]) -> int:
    level = int(level)
    if level <= 0:
        return 0
    return 1 if level == 1 else 2


class SessionOptions:
    """Session settings. Used: intra_op_num_threads (0 = the CPUs this process may use),
    graph_optimization_level, optimized_model_filepath (the optimized model is written there when
    the session is created), enable_cpu_mem_arena, and the session config entry
    "inferloop.precision" (auto, fp32, bf16, fp16, int8), enable_profiling and profile_file_prefix
    (every run's node timings, written by InferenceSession.end_profiling() to
    <prefix>_<date>_<time>_<ms>.json in the current folder, as ONNX Runtime names it). Accepted and
    kept, without effect: inter_op_num_threads, execution_mode, log_severity_level,
    log_verbosity_level, logid, enable_mem_pattern, enable_mem_reuse, use_deterministic_compute."""

    __slots__ = ("intra_op_num_threads", "inter_op_num_threads", "graph_optimization_level",
                 "optimized_model_filepath", "log_severity_level", "log_verbosity_level", "logid",
                 "execution_mode", "execution_order", "enable_cpu_mem_arena", "enable_mem_pattern",
                 "enable_mem_reuse", "enable_profiling", "profile_file_prefix",
                 "use_deterministic_compute", "_config")

    def __init__(self) -> None:
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.optimized_model_filepath = ""
        self.log_severity_level = -1
        self.log_verbosity_level = 0
        self.logid = ""
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.execution_order = 0
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.enable_profiling = False
        self.profile_file_prefix = "inferloop_profile_"
        self.use_deterministic_compute = False
        self._config: Dict[str, str] = {}

    def add_session_config_entry(self, key: str, value: str) -> None:
        self._config[str(key)] = str(value)

    def get_session_config_entry(self, key: str) -> str:
        if key not in self._config:
            raise _inferloop.Fail(f"INVALID_ARGUMENT: session config entry '{key}' is not set")
        return self._config[key]


class RunOptions:
    """Accepted for compatibility; inferloop reads none of its fields."""

    __slots__ = ("log_severity_level", "log_verbosity_level", "logid", "terminate",
                 "only_execute_path_to_fetches", "_config")

    def __init__(self) -> None:
        self.log_severity_level = -1
        self.log_verbosity_level = 0
        self.logid = ""
        self.terminate = False
        self.only_execute_path_to_fetches = False
        self._config: Dict[str, str] = {}

    def add_run_config_entry(self, key: str, value: str) -> None:
        self._config[str(key)] = str(value)

    def get_run_config_entry(self, key: str) -> str:
        return self._config[key]


class NodeArg:
    """A model input or output: name, type ('tensor(float)', ...) and shape (ints for fixed
    dims, str for symbolic ones, None for unknown ones; [] when the rank is unknown)."""

    __slots__ = ("name", "type", "shape")

    def __init__(self, name: str, type: str, shape: List[Union[int, str, None]]) -> None:
        self.name = name
        self.type = type
        self.shape = shape

    def __repr__(self) -> str:
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


class ModelMetadata:
    """What get_modelmeta() returns: the ModelProto's producer, domain, doc strings, version and
    metadata_props (custom_metadata_map)."""

    def __init__(self, fields: Mapping[str, Any]) -> None:
        self.producer_name: str = fields["producer_name"]
        self.graph_name: str = fields["graph_name"]
        self.domain: str = fields["domain"]
        self.description: str = fields["description"]
        self.graph_description: str = fields["graph_description"]
        self.version: int = fields["version"]
        self.custom_metadata_map: Dict[str, str] = dict(fields["custom_metadata_map"])


def _check_providers(providers: Optional[Sequence[Any]]) -> None:
    if providers is None:
        return
    if isinstance(providers, str):
        raise TypeError("providers must be a list of provider names, e.g. ['CPUExecutionProvider']")
    names = [p[0] if isinstance(p, (tuple, list)) else p for p in providers]
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"providers: a provider is named by a str, got {type(name).__name__}")
        if name != CPU_PROVIDER:
            warnings.warn(f"Specified provider '{name}' is not in available provider names."
                          f"Available providers: '{CPU_PROVIDER}'", stacklevel=3)


class InferenceSession:
    """A loaded model, ready to run: ONNX Runtime's InferenceSession over inferloop's engine.

    path_or_bytes: a model file path (str or os.PathLike) or the model's bytes.
    run() releases the GIL: Python threads may share one session and run in parallel.
    Inputs are read in place when they are C-contiguous numpy arrays of the input's dtype
    (otherwise copied first); outputs are numpy arrays over the engine's own buffers.
    """

    def __init__(self, path_or_bytes: Union[str, bytes, "os.PathLike[str]"],
                 sess_options: Optional[SessionOptions] = None,
                 providers: Optional[Sequence[Any]] = None,
                 provider_options: Optional[Sequence[Dict[str, Any]]] = None, **kwargs: Any) -> None:
        if isinstance(path_or_bytes, (bytearray, memoryview)):
            path_or_bytes = bytes(path_or_bytes)
        elif isinstance(path_or_bytes, os.PathLike):
            path_or_bytes = os.fspath(path_or_bytes)
        if not isinstance(path_or_bytes, (str, bytes)):
            raise TypeError(f"Unable to load from type '{type(path_or_bytes)}': pass a path or the model's bytes")
        _check_providers(providers)
        options = sess_options if sess_options is not None else SessionOptions()
        self._model_path = path_or_bytes if isinstance(path_or_bytes, str) else None
        self._sess_options = options
        level = _engine_level(options.graph_optimization_level)
        external_dir = "" if self._model_path is not None else os.getcwd()
        profiling = bool(options.enable_profiling)
        # As ONNX Runtime: profiling starts with the session, and the file is named then.
        self._profiling_start_ns = time.time_ns() if profiling else 0
        self._profile_file = ""
        if profiling:
            now = datetime.datetime.fromtimestamp(self._profiling_start_ns / 1e9)
            self._profile_file = (f"{options.profile_file_prefix}_{now:%Y-%m-%d_%H-%M-%S}_"
                                  f"{now.microsecond // 1000:03d}.json")
        self._sess = _inferloop.Session(
            path_or_bytes, intra_op_threads=int(options.intra_op_num_threads), optimization_level=level,
            enable_memory_arena=bool(options.enable_cpu_mem_arena),
            precision=options._config.get("inferloop.precision", ""), external_data_dir=external_dir,
            enable_profiling=profiling)
        if options.optimized_model_filepath:
            _inferloop.save_optimized_model(path_or_bytes, level, os.fspath(options.optimized_model_filepath),
                                            external_dir)
        # Metadata: scanned now from bytes (cheap), read from the file on first use for a path.
        self._model_meta = None if self._model_path is not None else ModelMetadata(_inferloop.model_metadata(path_or_bytes))
        self._inputs_meta = [NodeArg(*d) for d in self._sess.inputs()]
        self._outputs_meta = [NodeArg(*d) for d in self._sess.outputs()]

    def run(self, output_names: Optional[Sequence[str]], input_feed: Mapping[str, Any],
            run_options: Optional[RunOptions] = None) -> List[Any]:
        """Runs the model: output_names (None or [] = all outputs, in graph order), input_feed a
        dict of input name -> numpy array (or list of arrays for a sequence input). Returns a list
        of numpy arrays (lists for sequences, None for absent optionals)."""
        return self._sess.run(output_names or None, input_feed)

    def get_inputs(self) -> List[NodeArg]:
        return self._inputs_meta

    def get_outputs(self) -> List[NodeArg]:
        return self._outputs_meta

    def get_overridable_initializers(self) -> List[NodeArg]:
        return []

    def get_modelmeta(self) -> ModelMetadata:
        if self._model_meta is None:
            self._model_meta = ModelMetadata(_inferloop.model_metadata(self._model_path))
        return self._model_meta

    def get_providers(self) -> List[str]:
        return [CPU_PROVIDER]

    def get_provider_options(self) -> Dict[str, Dict[str, str]]:
        return {CPU_PROVIDER: {}}

    def set_providers(self, providers: Optional[Sequence[Any]] = None,
                      provider_options: Optional[Sequence[Dict[str, Any]]] = None) -> None:
        _check_providers(providers)

    def get_session_options(self) -> SessionOptions:
        return self._sess_options

    def disable_fallback(self) -> None:
        pass

    def enable_fallback(self) -> None:
        pass

    def end_profiling(self) -> str:
        """With SessionOptions.enable_profiling: writes the runs profiled so far (every run's
        node kernel times, category "Node", and one "model_run" per run, category "Session") as
        a Chrome trace JSON in ONNX Runtime's format, stops profiling and returns the file's name.
        "" when profiling is off (not enabled, or already ended), as in ONNX Runtime."""
        if not self._profile_file or not self._sess.end_profiling(self._profile_file):
            return ""
        return self._profile_file

    def get_profiling_start_time_ns(self) -> int:
        """When profiling started (the session's creation), in ns since the epoch; 0 without
        enable_profiling."""
        return self._profiling_start_ns

    # inferloop's own additions.
    def close(self) -> None:
        """Frees the engine session now (a run in flight finishes first); later runs raise
        inferloop.Fail. Not in ONNX Runtime, where the session lives until it is collected."""
        self._sess.close()

    def __enter__(self) -> "InferenceSession":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def copy_counts(self) -> Dict[str, int]:
        """Feeds read in place (inputs_viewed) or copied, outputs handed over (outputs_wrapped)
        or copied, over this session's runs so far."""
        return self._sess.copy_counts()
