"""Returned cache_lengths are the input lengths: the T new tokens are never counted."""

import dataclasses

import cache_aware_lm
from cache_aware_lm import CacheAwareCausalLM
from gptlab_testkit.mutants import retyped_factory

VARIABLE = "CACHE_AWARE_LM_MODULE"
EXPECTED_OWNER = "cache_metadata"


class StaleLengthsLM(CacheAwareCausalLM):
    def forward(self, input_ids, positions, *cache, **options):
        out = super().forward(input_ids, positions, *cache, **options)
        if out.cache_lengths is None:
            return out
        # mistake: lengths out = lengths in (zeros without a cache); "+ T" is missing
        stale = out.cache_lengths - input_ids.shape[1]
        return dataclasses.replace(out, cache_lengths=stale)


classes = {CacheAwareCausalLM: StaleLengthsLM}
make_test_model = retyped_factory(cache_aware_lm.make_test_model, classes)
make_eos_test_model = retyped_factory(cache_aware_lm.make_eos_test_model, classes)
