"""The serving path writes K/V in place but never advances the storage's lengths."""

from cache_aware_lm import (
    folded_grouped_query_attention,
    grouped_query_attention,
    make_eos_test_model,
    make_test_model,
)
from cache_aware_lm import serve_generate as _reference_serve_generate

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


class _UncommittedStorage:
    """Forwards reads to the request storage and drops the final append."""

    def __init__(self, storage):
        self._storage = storage

    @property
    def storage(self):
        return self._storage.storage

    @property
    def cache_lengths(self):
        return self._storage.cache_lengths

    @property
    def cache_start_positions(self):
        return self._storage.cache_start_positions

    def append(self, past_key_values, positions):
        # mistake: "the K/V are already in place, nothing left to do": the storage still
        # counts the old lengths, so a follow-up request overwrites or skips what was fed
        return None


def serve_generate(model, input_ids, positions, max_new_tokens, storage, eos_token_id=None):
    return _reference_serve_generate(
        model, input_ids, positions, max_new_tokens, _UncommittedStorage(storage), eos_token_id
    )
