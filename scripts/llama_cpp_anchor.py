"""llama.cpp (PyPI llama-cpp-python, built by scripts/setup_llama_cpp.sh) as the anchor the LLM
tests and benchmarks compare inferloop with.

llama.cpp's weight-repacking buffers ("extra buffer types", on by default) make llama_decode crash
with a segmentation fault in this build on this machine for every Q4_0/Q8_0 file tried
(TinyLlama-shaped ones included; F16/F32 run). load() therefore makes llama.cpp's default model
parameters use its standard quantized kernels (use_extra_bufts = false) for every model loaded
afterwards (llama_cpp.Llama reads those defaults).
"""


def load():
    """The llama_cpp module with repacking off by default, or None when it is not installed."""
    try:
        import llama_cpp
        import llama_cpp.llama_cpp as c
    except ImportError:
        return None
    default = c.llama_model_default_params
    if not getattr(default, "inferloop_without_repack", False):
        def without_repack():
            p = default()
            p.use_extra_bufts = False
            return p

        without_repack.inferloop_without_repack = True
        c.llama_model_default_params = without_repack
    return llama_cpp
