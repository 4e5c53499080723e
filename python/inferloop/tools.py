"""inferloop.quantize and inferloop.compare: `inferloop quantize` and `inferloop compare` as
functions, with the CLI's options as keyword arguments, returning their reports as dicts
(python/src/tools_binding.cc)."""
from ._inferloop import compare, quantize

__all__ = ["compare", "quantize"]
