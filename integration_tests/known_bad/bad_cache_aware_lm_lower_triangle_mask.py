"""The mask is a lower-triangular [T, S] matrix over slots, not "key position <= query position"."""

import torch

import cache_aware_lm
from cache_aware_lm import CacheAwareCausalLM
from gptlab_testkit.mutants import retyped_factory

VARIABLE = "CACHE_AWARE_LM_MODULE"
EXPECTED_OWNER = "rectangular_mask"


def lower_triangle_mask(query_positions, key_starts, key_lengths, storage_length):
    T = query_positions.shape[1]
    # mistake: the triangle sits in the upper-left corner and hides cached keys from later queries
    causal = torch.ones(T, storage_length, dtype=torch.bool, device=query_positions.device).tril()
    slot = torch.arange(storage_length, device=query_positions.device)
    valid = slot[None, :] < key_lengths[:, None]
    return (causal[None] & valid[:, None, :])[:, None]


class LowerTriangleLM(CacheAwareCausalLM):
    attention_mask = staticmethod(lower_triangle_mask)


classes = {CacheAwareCausalLM: LowerTriangleLM}
make_test_model = retyped_factory(cache_aware_lm.make_test_model, classes)
make_eos_test_model = retyped_factory(cache_aware_lm.make_eos_test_model, classes)
