"""The bias is added once, on rank 0, as row parallelism does after its sum: in a column
split every rank owns output features of its own, so ranks 1.. lose their bias slice."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT36_MODULE"
EXPECTED_OWNER = "pt36"

pt36 = mutated_module(
    "gptlab_drills.pt36",
    [
        (
            "else list(bias.chunk(world_size))",
            "else [bias.chunk(world_size)[0]] + [None] * (world_size - 1)",
        )
    ],
)
globals().update(export_with("gptlab_drills.pt36", pt36))
