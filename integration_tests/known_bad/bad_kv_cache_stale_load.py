"""KVCache.load copies the source rectangle and zeroes nothing: padding and old slots survive.

Each row's valid prefix is right, so a masked model call still agrees; but slots
past a row's length keep the source's padding and whatever the storage held.
"""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "KV_CACHE_MODULE"
EXPECTED_OWNER = "storage_lifecycle"

cache = mutated_module(
    "kv_cache.cache",
    [
        (".copy_(given_BHSD).masked_fill_(padding_B1S1, 0)", ".copy_(given_BHSD)"),
        ("stored_BHCD[:, :, S:].zero_()", "pass"),
    ],
    within="KVCache.load",
)
globals().update(export_with("kv_cache", cache))
