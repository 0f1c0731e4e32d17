"""New K/V are scattered into the caller's cache when its storage has room."""

import cache_aware_lm
from cache_aware_lm import CacheAwareCausalLM, FunctionalCacheWriter

VARIABLE = "CACHE_AWARE_LM_MODULE"
EXPECTED_OWNER = "cache_immutability"

__all__ = ["make_eos_test_model", "make_test_model"]


class InPlaceWhenRoomWriter(FunctionalCacheWriter):
    def _extend(self, past, new):
        if past is None or past.shape[2] < self.storage_length:
            return super()._extend(past, new)
        B, H, T, D = new.shape
        index = self._write_slots[:, None, :, None].expand(B, H, T, D)
        # mistake: scatter_ writes the caller's tensor; a functional cache must build a new one
        return past.scatter_(2, index, new)[:, :, : self.storage_length]


class InPlaceCacheLM(CacheAwareCausalLM):
    def make_cache_writer(self, past, cache_lengths, new_tokens):
        return InPlaceWhenRoomWriter(past, cache_lengths, new_tokens)


def _rebuild(reference):
    model = InPlaceCacheLM(reference.config)
    model.load_state_dict(reference.state_dict())
    return model.eval()


def make_test_model():
    return _rebuild(cache_aware_lm.make_test_model())


def make_eos_test_model():
    return _rebuild(cache_aware_lm.make_eos_test_model())
