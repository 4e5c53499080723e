from typing import Any, Optional, Sequence, Union

def quantize(model: str, output: str, calibration: Optional[str] = None, *, method: str = "minmax",
             percentile: float = 99.99, per_channel: bool = False, reduce_range: bool = False, dynamic: bool = False,
             quantize_activation_matmul: bool = False, exclude: Union[str, Sequence[str], None] = None,
             max_accuracy_drop: Optional[float] = None, eval: Optional[str] = None, stats: Optional[str] = None,
             timing_runs: int = 30, progress: bool = False) -> dict[str, Any]:
    """Post-training INT8 quantization of an ONNX model, as `inferloop quantize` (same options).

    Returns {model, output, mode ('static'|'dynamic'), method (None for dynamic), per_channel,
    reduce_range, quantized_nodes, qdq_tensors, excluded, kept_fp32, warnings, eval (None, or {samples, metric,
    fp32, int8, drop, cosine, agreement[, within_bound]}), model_bytes, output_bytes,
    timing (None, or {runs, fp32_ms, int8_ms}), log (the CLI's text)}."""

def compare(model_a: str, model_b: Optional[str] = None, data: Optional[str] = None, *,
            cosine_threshold: float = 0.99, calibration: Optional[str] = None,
            tensors: Union[str, Sequence[str], None] = None, sensitivity: bool = False,
            eval: Optional[str] = None, method: str = "minmax", percentile: float = 99.99,
            per_channel: bool = False, reduce_range: bool = False, stats: Optional[str] = None,
            progress: bool = False) -> dict[str, Any]:
    """Runs two models on the same inputs and compares every intermediate tensor they share by name,
    as `inferloop compare` (same options); returns its --json report: {model_a, model_b, samples,
    cosine_threshold, inputs, tensors: [{name, shape, output, status, cosine, max_abs, max_rel, a, b,
    diverged} ...], first_divergence (a name or None), only_in_a, only_in_b, preprocessing_mismatch}.
    With sensitivity=True (model_a, calibration and eval only): the per-layer sensitivity ranking."""

__all__ = ["compare", "quantize"]
