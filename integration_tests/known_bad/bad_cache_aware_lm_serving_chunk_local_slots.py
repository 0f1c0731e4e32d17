"""The serving writer stores each call's K/V in slots 0..T-1 (chunk-local), not position - start."""

import importlib.util

from cache_aware_lm import (
    InPlaceCacheWriter,
    folded_grouped_query_attention,
    grouped_query_attention,
    make_eos_test_model,
    make_test_model,
    serving,
)

VARIABLE = "CACHE_AWARE_LM_MODULE"
EXPECTED_OWNER = "serving_decode"
SCOPE = "all"  # the serving path is this project's extension, beyond CONTRACTS.md

__all__ = [
    "folded_grouped_query_attention",
    "grouped_query_attention",
    "make_eos_test_model",
    "make_test_model",
    "serve_generate",
]


class ChunkLocalWriter(InPlaceCacheWriter):
    def __init__(self, storage, slots_BT, attend_length):
        # mistake: arange(T) slots, as if each call began an empty cache; decode overwrites slot 0
        super().__init__(storage, slots_BT - slots_BT[:, :1], attend_length)


def _private_copy(module):
    """A fresh copy of a cache_aware_lm module: patch the copy, never the reference."""
    spec = importlib.util.spec_from_file_location(f"{module.__name__}_bad_copy", module.__file__)
    copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(copy)
    return copy


_serving = _private_copy(serving)
_serving.InPlaceCacheWriter = ChunkLocalWriter
serve_generate = _serving.serve_generate
