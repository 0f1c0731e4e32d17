"""A lookup hit does not move its entry to the end, so LRU evicts a recently used snapshot."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "PREFIX_CACHE_MODULE"
EXPECTED_OWNER = "prefix_lru"

no_refresh = ("self._entries.move_to_end(found)", "pass  # mistake: the hit keeps its LRU place")
cache = mutated_module("prefix_cache.cache", [no_refresh], within="PrefixCache._record")
globals().update(export_with("prefix_cache", cache))
