"""store keeps views of the caller's K/V, so writing the source afterwards corrupts the snapshot."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "PREFIX_CACHE_MODULE"
EXPECTED_OWNER = "snapshot_ownership"

# mistake: slicing makes views of the source; .clone() is missing
views = "tuple((k[:, :, :length], v[:, :, :length]) for k, v in past)"
cache = mutated_module(
    "prefix_cache.cache", [("clone_past(past, length)", views)], within="PrefixCache.store"
)
globals().update(export_with("prefix_cache", cache))
