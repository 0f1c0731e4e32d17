"""The prefix key leaves out the namespace, so one model's snapshots answer another's lookups."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "PREFIX_CACHE_MODULE"
EXPECTED_OWNER = "prefix_key"

key = ("return (namespace, start_position, prefix)", "return (start_position, prefix)")
globals().update(export_with("prefix_cache", mutated_module("prefix_cache.cache", [key])))
