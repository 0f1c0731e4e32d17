"""Returned cache_lengths are the input lengths: the T new tokens are never counted."""

import dataclasses

import cache_aware_lm
from cache_aware_lm import CacheAwareCausalLM

VARIABLE = "CACHE_AWARE_LM_MODULE"
EXPECTED_OWNER = "cache_metadata"

__all__ = ["make_eos_test_model", "make_test_model"]


class StaleLengthsLM(CacheAwareCausalLM):
    def forward(self, input_ids, positions, past_key_values=None, cache_lengths=None,
                cache_start_positions=None, use_cache=False):  # fmt: skip
        out = super().forward(
            input_ids, positions, past_key_values, cache_lengths, cache_start_positions, use_cache
        )
        if out.cache_lengths is None:
            return out
        # mistake: lengths out = lengths in (zeros without a cache); "+ T" is missing
        stale = out.cache_lengths - input_ids.shape[1]
        return dataclasses.replace(out, cache_lengths=stale)


def _rebuild(reference):
    model = StaleLengthsLM(reference.config)
    model.load_state_dict(reference.state_dict())
    return model.eval()


def make_test_model():
    return _rebuild(cache_aware_lm.make_test_model())


def make_eos_test_model():
    return _rebuild(cache_aware_lm.make_eos_test_model())
