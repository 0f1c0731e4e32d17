"""The serving mask lets every row see the slots valid for the longest row (stale slots leak)."""

import importlib.util

from cache_aware_lm import (
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


def one_mask_for_all_rows(query, keys, values, mask):
    # mistake: one [T, L] mask for the batch (as with a single request): a short row also
    # attends to slots past its own length that only the longest row has filled
    shared = mask.any(dim=0, keepdim=True).expand_as(mask)
    return folded_grouped_query_attention(query, keys, values, shared)


def _private_copy(module):
    """A fresh copy of a cache_aware_lm module: patch the copy, never the reference."""
    spec = importlib.util.spec_from_file_location(f"{module.__name__}_bad_copy", module.__file__)
    copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(copy)
    return copy


_serving = _private_copy(serving)
_serving.folded_grouped_query_attention = one_mask_for_all_rows
serve_generate = _serving.serve_generate
