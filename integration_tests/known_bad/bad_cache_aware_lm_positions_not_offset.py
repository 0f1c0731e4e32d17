"""Position embeddings use arange(T), not the given absolute positions (no cache offset)."""

import torch

import cache_aware_lm
from cache_aware_lm import CacheAwareCausalLM

VARIABLE = "CACHE_AWARE_LM_MODULE"
EXPECTED_OWNER = "position_origins"

__all__ = ["make_eos_test_model", "make_test_model"]


class ChunkLocalPositionsLM(CacheAwareCausalLM):
    def embed(self, input_ids, positions):
        # mistake: nanoGPT's arange(T), as if every chunk started at position 0
        local = torch.arange(input_ids.shape[1], device=input_ids.device)
        return self.token_embedding(input_ids) + self.position_embedding(local)


def _rebuild(reference):
    model = ChunkLocalPositionsLM(reference.config)
    model.load_state_dict(reference.state_dict())
    return model.eval()


def make_test_model():
    return _rebuild(cache_aware_lm.make_test_model())


def make_eos_test_model():
    return _rebuild(cache_aware_lm.make_eos_test_model())
