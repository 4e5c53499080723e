from typing import Iterator, Literal, Mapping, Optional, Sequence, Union, overload

class Generation(Iterator[str]):
    """A streaming generation (LLM.generate(..., stream=True)): iterating yields text pieces (whole
    UTF-8 characters, never part of a stop string) as tokens are generated; the pieces joined are the
    text generate(..., stream=False) returns. close(), leaving a `with` block, or dropping the object
    stops the generation at the next token."""

    def __iter__(self) -> "Generation": ...
    def __next__(self) -> str: ...
    def close(self) -> None:
        """Stops the generation (at the next token) and waits for it to end; later next() raises StopIteration."""
    def __enter__(self) -> "Generation": ...
    def __exit__(self, exc_type: object, exc: object, tb: object) -> None: ...
    @property
    def token_ids(self) -> list[int]:
        """Ids of the tokens generated so far (an end-of-generation token is not among them)."""
    @property
    def prompt_token_ids(self) -> list[int]: ...
    @property
    def finish_reason(self) -> Optional[Literal["stop", "length", "cancelled"]]:
        """None while running; 'stop' (end-of-generation token or a stop string), 'length' (max_tokens)
        or 'cancelled' (closed early)."""
    @property
    def stats(self) -> Optional[dict[str, Union[int, float]]]:
        """None while running; then prompt_tokens, generated_tokens, prompt_seconds, generate_seconds."""

class LLM:
    """A GGUF llama-family model (llama, mistral, qwen2), loaded (mmap) once and shared by generations.

    path: the .gguf file. threads: compute threads (0: the CPUs this process may use).
    kv_type: the KV cache's element type, "f16" or "q8_0". Errors: inferloop.NoSuchFile /
    inferloop.InvalidArgument / inferloop.Fail with the engine's message."""

    def __init__(self, path: str, *, threads: int = 0, kv_type: str = "f16") -> None: ...
    def tokenize(self, text: str, *, add_bos: bool = True, parse_special: bool = False) -> list[int]:
        """Token ids of `text` (BOS first with add_bos, when the vocab uses one); parse_special:
        special tokens written in the text (<|eot_id|>, </s>) become single tokens."""
    def detokenize(self, ids: Sequence[int], *, render_special: bool = False) -> str:
        """The text of token ids (invalid UTF-8 becomes U+FFFD); render_special shows control tokens."""
    @overload
    def generate(self, prompt: Union[str, Sequence[int]], *, max_tokens: int = 128, temperature: float = 0.8,
                 top_k: int = 40, top_p: float = 0.95, seed: int = 0,
                 stop: Union[str, Sequence[str], None] = None, stream: Literal[True] = True,
                 add_bos: bool = True, ignore_eos: bool = False, min_p: float = 0.0,
                 presence_penalty: float = 0.0, frequency_penalty: float = 0.0, repetition_penalty: float = 1.0,
                 logit_bias: Optional[Mapping[int, float]] = None) -> Generation: ...
    @overload
    def generate(self, prompt: Union[str, Sequence[int]], *, max_tokens: int = 128, temperature: float = 0.8,
                 top_k: int = 40, top_p: float = 0.95, seed: int = 0,
                 stop: Union[str, Sequence[str], None] = None, stream: Literal[False],
                 add_bos: bool = True, ignore_eos: bool = False, min_p: float = 0.0,
                 presence_penalty: float = 0.0, frequency_penalty: float = 0.0, repetition_penalty: float = 1.0,
                 logit_bias: Optional[Mapping[int, float]] = None) -> str: ...
    # generate(): temperature 0 is greedy; min_p keeps tokens at least min_p times the top token's
    # probability ([0, 1], 0 = off); presence_penalty / frequency_penalty ([-2, 2], OpenAI's) lower
    # the logits of generated tokens by a constant / by their count; repetition_penalty (> 0, 1 =
    # off, llama.cpp's) divides positive logits (multiplies negative ones) of prompt and generated
    # tokens; logit_bias {token id: bias in [-100, 100]} is added to the logits. A bad value raises
    # inferloop.InvalidArgument with the engine's message.
    @property
    def path(self) -> str: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def context_length(self) -> int: ...
    @property
    def bos_token_id(self) -> int:
        """-1 when the vocab has none."""
    @property
    def eos_token_id(self) -> int:
        """-1 when the vocab has none."""

__all__ = ["Generation", "LLM"]
