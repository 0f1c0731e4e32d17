"""Each token's position is its index inside the scheduled chunk (0, 1, ...), not its place
inside the request (start + i); the tokens are still read from the right place."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT27_MODULE"
EXPECTED_OWNER = "pt27"

pt27 = mutated_module(
    "gptlab_drills.pt27",
    [
        (
            "    return token_buffer[row_ids, positions], row_ids, positions, offsets",
            "    return token_buffer[row_ids, positions], row_ids, within, offsets",
        )
    ],
)
globals().update(export_with("gptlab_drills.pt27", pt27))
