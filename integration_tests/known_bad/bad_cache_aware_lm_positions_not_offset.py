"""Position embeddings use arange(T), not the given absolute positions (no cache offset)."""

import torch

import cache_aware_lm
from cache_aware_lm import CacheAwareCausalLM
from gptlab_testkit.mutants import retyped_factory

VARIABLE = "CACHE_AWARE_LM_MODULE"
EXPECTED_OWNER = "position_origins"


class ChunkLocalPositionsLM(CacheAwareCausalLM):
    def embed(self, input_ids, positions):
        # mistake: nanoGPT's arange(T), as if every chunk started at position 0
        local = torch.arange(input_ids.shape[1], device=input_ids.device)
        return self.token_embedding(input_ids) + self.position_embedding(local)


classes = {CacheAwareCausalLM: ChunkLocalPositionsLM}
make_test_model = retyped_factory(cache_aware_lm.make_test_model, classes)
make_eos_test_model = retyped_factory(cache_aware_lm.make_eos_test_model, classes)
