"""The fresh-output form still writes its input (the start file's hidden mutation, left in
one operator): cache_written updates cache in place and returns a copy of it."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT34_MODULE"
EXPECTED_OWNER = "pt34"

pt34 = mutated_module(
    "gptlab_drills.pt34",
    [
        (
            "    return cache.clone(memory_format=torch.contiguous_format).index_copy_(0, index, value)",
            "    return cache.index_copy_(0, index, value).clone(memory_format=torch.contiguous_format)",
        )
    ],
)
globals().update(export_with("gptlab_drills.pt34", pt34))
