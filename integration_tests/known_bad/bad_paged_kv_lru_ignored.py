"""Eviction takes the most recently freed cached block instead of the least recently used."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "PAGED_KV_MODULE"
EXPECTED_OWNER = "paged_prefix_cache"

block_cache = mutated_module(
    "paged_kv.block_cache", [("self._lru.popitem(last=False)", "self._lru.popitem(last=True)")]
)
cache = mutated_module("paged_kv.cache", rebind={"BlockCache": block_cache.BlockCache})
globals().update(export_with("paged_kv", cache))
