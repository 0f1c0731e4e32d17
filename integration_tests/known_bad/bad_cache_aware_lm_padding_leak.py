"""New K/V are appended after the storage end, so each row's padded slots are attended."""

import torch

import cache_aware_lm
from cache_aware_lm import CacheAwareCausalLM
from gptlab_testkit.mutants import retyped_factory

VARIABLE = "CACHE_AWARE_LM_MODULE"
EXPECTED_OWNER = "padded_slots"


class CatAtStorageEndWriter:
    """mistake: torch.cat([past, new]) ignores each row's length; padding stays in the middle."""

    def __init__(self, past, cache_lengths, new_tokens):
        self._past = past
        self._storage = new_tokens + (0 if past is None else past[0][0].shape[2])

    @property
    def storage_length(self):
        return self._storage

    def write(self, layer_index, key_new, value_new):
        if self._past is None:
            return key_new, value_new
        key, value = self._past[layer_index]
        return torch.cat([key, key_new], dim=2), torch.cat([value, value_new], dim=2)


class PaddingLeakLM(CacheAwareCausalLM):
    # the model calls make_cache_writer(past, cache_lengths, new_tokens)
    make_cache_writer = staticmethod(CatAtStorageEndWriter)


classes = {CacheAwareCausalLM: PaddingLeakLM}
make_test_model = retyped_factory(cache_aware_lm.make_test_model, classes)
make_eos_test_model = retyped_factory(cache_aware_lm.make_eos_test_model, classes)
