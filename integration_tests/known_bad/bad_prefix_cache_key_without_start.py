"""The prefix key leaves out the absolute start, so K/V cached at one origin serve another."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "PREFIX_CACHE_MODULE"
EXPECTED_OWNER = "prefix_key"

key = ("return (namespace, start_position, prefix)", "return (namespace, prefix)")
globals().update(export_with("prefix_cache", mutated_module("prefix_cache.cache", [key])))
