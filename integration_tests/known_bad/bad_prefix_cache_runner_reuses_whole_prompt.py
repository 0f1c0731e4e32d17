"""The runner reuses every cached block of the prompt, leaving no token to compute logits for."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "PREFIX_CACHE_MODULE"
EXPECTED_OWNER = "prefix_runner"

# mistake: B * floor(T / B) where B * floor((T - 1) / B) is the cap
cap = (
    "block_size * ((prompt_length - 1) // block_size)",
    "block_size * (prompt_length // block_size)",
)
globals().update(export_with("prefix_cache", mutated_module("prefix_cache.runner", [cap])))
