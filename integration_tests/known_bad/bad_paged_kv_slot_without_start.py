"""The slot formula indexes the block table by the absolute position, forgetting the start.

Requests starting at 0 are unaffected; any later origin puts its tokens at the
wrong offsets, or past the end of its block table.
"""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "PAGED_KV_MODULE"
EXPECTED_OWNER = "paged_slots"

tables = mutated_module(
    "paged_kv.block_table", [("offset = position - table.start", "offset = position")]
)
cache = mutated_module("paged_kv.cache", rebind={"slots_of": tables.slots_of})
globals().update(export_with("paged_kv", cache))
