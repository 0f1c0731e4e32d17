"""The write-only form still hands back a cache: declared mutated, it returns a copy
instead of None (and its fake a tensor), so callers keep the copy and the schema lies."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT34_MODULE"
EXPECTED_OWNER = "pt34"

pt34 = mutated_module(
    "gptlab_drills.pt34",
    [
        (
            "def cache_write_(cache: Tensor, index: Tensor, value: Tensor) -> None:",
            "def cache_write_(cache: Tensor, index: Tensor, value: Tensor) -> Tensor:",
        ),
        (
            "    cache.index_copy_(0, index, value)\n",
            "    cache.index_copy_(0, index, value)\n    return cache.clone()\n",
        ),
        (
            "def _cache_write_fake(cache: Tensor, index: Tensor, value: Tensor) -> None:\n"
            "    _check_shapes(cache, index, value)\n",
            "def _cache_write_fake(cache: Tensor, index: Tensor, value: Tensor) -> Tensor:\n"
            "    _check_shapes(cache, index, value)\n    return torch.empty_like(cache)\n",
        ),
    ],
)
globals().update(export_with("gptlab_drills.pt34", pt34))
