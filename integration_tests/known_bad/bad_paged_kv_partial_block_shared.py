"""The partially filled last block is hashed and reused like a full one.

A request admitted with a prompt that ends inside another request's last block
takes that block, and both then write their next tokens into the same slots.
"""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "PAGED_KV_MODULE"
EXPECTED_OWNER = "paged_prefix_cache"

hashing = mutated_module(
    "paged_kv.hashing",
    [("return token_count // block_size", "return -(-token_count // block_size)")],
)
cache = mutated_module(
    "paged_kv.cache",
    [("cap = self.block_size * ((len(prompt) - 1) // self.block_size)", "cap = len(prompt) - 1")],
    rebind={
        "chain_hashes": hashing.chain_hashes,
        "full_blocks": hashing.full_blocks,
        "block_hash": hashing.block_hash,
    },
)
globals().update(export_with("paged_kv", cache))
