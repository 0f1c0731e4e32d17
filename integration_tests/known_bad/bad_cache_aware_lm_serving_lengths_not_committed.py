"""The serving path writes K/V in place but never advances the storage's lengths."""

import cache_aware_lm
from gptlab_testkit.mutants import mutated_module

VARIABLE = "CACHE_AWARE_LM_MODULE"
EXPECTED_OWNER = "serving_decode"
SCOPE = "all"  # the serving path is this project's extension, beyond the contract

# mistake: "the K/V are already in place, nothing left to do": the storage still counts
# the old lengths, so a follow-up request overwrites or skips what was fed
no_append = ("storage.append(tuple(delta), starts_B[:, None] + slots_BN)", "pass")
serving = mutated_module("cache_aware_lm.serving", [no_append], within="_commit_written")

globals().update({name: getattr(cache_aware_lm, name) for name in cache_aware_lm.__all__})
serve_generate = serving.serve_generate
