"""inferloop.LLM: text generation with a GGUF llama-family model (llama, mistral, qwen2) in process,
the engine `inferloop generate` and `inferloop serve`'s /v1 endpoints use (python/src/llm_binding.cc).

    llm = inferloop.LLM("stories260k.gguf")
    for piece in llm.generate("Once upon a time", max_tokens=64, temperature=0):
        print(piece, end="", flush=True)
"""
from ._inferloop import LLM, Generation

__all__ = ["Generation", "LLM"]
