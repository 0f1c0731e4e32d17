"""A lookup returns the stored tensors themselves, so writing a match corrupts the snapshot."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "PREFIX_CACHE_MODULE"
EXPECTED_OWNER = "snapshot_ownership"

not_cloned = ("clone_past(self._entries[found], length)", "self._entries[found]")
cache = mutated_module("prefix_cache.cache", [not_cloned], within="PrefixCache._match")
globals().update(export_with("prefix_cache", cache))
