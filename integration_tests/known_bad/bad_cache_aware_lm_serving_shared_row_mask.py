"""The serving mask lets every row see the slots valid for the longest row (stale slots leak)."""

import cache_aware_lm
from gptlab_testkit.mutants import mutated_module

VARIABLE = "CACHE_AWARE_LM_MODULE"
EXPECTED_OWNER = "serving_decode"
SCOPE = "all"  # the serving path is this project's extension, beyond the contract


def one_mask_for_all_rows(query, keys, values, mask):
    # mistake: one [T, L] mask for the batch (as with a single request): a short row also
    # attends to slots past its own length that only the longest row has filled
    shared = mask.any(dim=0, keepdim=True).expand_as(mask)
    return cache_aware_lm.folded_grouped_query_attention(query, keys, values, shared)


serving = mutated_module(
    "cache_aware_lm.serving", rebind={"folded_grouped_query_attention": one_mask_for_all_rows}
)

globals().update({name: getattr(cache_aware_lm, name) for name in cache_aware_lm.__all__})
serve_generate = serving.serve_generate
