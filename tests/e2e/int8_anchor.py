"""The anchor an int8 model's outputs are checked against, by CPU.

ONNX Runtime's u8s8 int8 kernels are exact only with VNNI or AMX. Without them (an AVX2-only CPU,
e.g. AMD EPYC Zen 3) they add u8 x s8 pairs into saturating int16 (vpmaddubsw), a limitation ORT's
quantization docs name. Measured on such a CPU: ORT was 3-26 output quantization steps from ONNX's
reference evaluator on per-channel QDQ models (tests/e2e/test_qdq.py's), inferloop within 1. There
the anchor is ONNX's own reference evaluator (onnx.reference: exact numpy).
"""
import os
import sys

import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import isa_mask  # noqa: E402  (cpu_flags)


def has_vnni_or_amx():
    """Whether the CPU has int8 dot-product instructions (AVX512-VNNI, AVX-VNNI or AMX)."""
    return bool(isa_mask.cpu_flags() & {"amx_int8", "avx512_vnni", "avx_vnni"})


def ort_int8_is_exact():
    return has_vnni_or_amx()


def onnx_reference_run(model_path, feeds):
    """{output name: array} from onnx.reference. It has QuantizeLinear / DequantizeLinear from opset
    19 on; the default-domain opset is raised to 21 for it (the int8 and float ops these test
    models use mean the same there)."""
    from onnx.reference import ReferenceEvaluator
    m = onnx.load(model_path)
    for op in m.opset_import:
        if op.domain in ("", "ai.onnx"):
            op.version = max(op.version, 21)
    return dict(zip([o.name for o in m.graph.output], ReferenceEvaluator(m).run(None, feeds)))


def int8_anchor_run(model_path, feeds):
    """ONNX Runtime's outputs where its int8 kernels are exact, else onnx.reference's."""
    if not ort_int8_is_exact():
        return onnx_reference_run(model_path, feeds)
    import onnxruntime as ort
    s = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, feeds)))
