"""lookup_longest searches down from the raw limit, not a block boundary: aligned entries missed."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "PREFIX_CACHE_MODULE"
EXPECTED_OWNER = "prefix_key"

raw_limit = ("range(longest, 0,", "range(limit, 0,")
cache = mutated_module("prefix_cache.cache", [raw_limit], within="PrefixCache._longest")
globals().update(export_with("prefix_cache", cache))
