"""The block hash leaves out the parent's hash, so equal blocks under different prefixes collide.

A block is then found by its own tokens alone: a prompt whose second block repeats
some cached first block reuses that block's K/V (computed at other positions,
after another prefix) as if it were its own.
"""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "PAGED_KV_MODULE"
EXPECTED_OWNER = "block_hash_chain"

hashing = mutated_module(
    "paged_kv.hashing",
    [("digest.update(_ROOT if parent is None else parent)", "digest.update(_ROOT)")],
)
cache = mutated_module(
    "paged_kv.cache",
    rebind={"block_hash": hashing.block_hash, "chain_hashes": hashing.chain_hashes},
)
globals().update(export_with("paged_kv", cache))
