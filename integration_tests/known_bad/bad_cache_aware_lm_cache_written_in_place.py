"""New K/V are scattered into the caller's cache when its storage has room."""

import cache_aware_lm
from cache_aware_lm import CacheAwareCausalLM, FunctionalCacheWriter
from gptlab_testkit.mutants import retyped_factory

VARIABLE = "CACHE_AWARE_LM_MODULE"
EXPECTED_OWNER = "cache_immutability"


class InPlaceWhenRoomWriter(FunctionalCacheWriter):
    def _extend(self, past, new):
        if past is None or past.shape[2] < self.storage_length:
            return super()._extend(past, new)
        B, H, T, D = new.shape
        index = self._write_slots[:, None, :, None].expand(B, H, T, D)
        # mistake: scatter_ writes the caller's tensor; a functional cache must build a new one
        return past.scatter_(2, index, new)[:, :, : self.storage_length]


class InPlaceCacheLM(CacheAwareCausalLM):
    # the model calls make_cache_writer(past, cache_lengths, new_tokens)
    make_cache_writer = staticmethod(InPlaceWhenRoomWriter)


classes = {CacheAwareCausalLM: InPlaceCacheLM}
make_test_model = retyped_factory(cache_aware_lm.make_test_model, classes)
make_eos_test_model = retyped_factory(cache_aware_lm.make_eos_test_model, classes)
