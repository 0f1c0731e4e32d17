"""Tokens packed time-major (every row's first step, then every row's second): coordinates
and round trip still agree, but the packed order is not request after request."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT02_MODULE"
EXPECTED_OWNER = "pt02"

pt02 = mutated_module(
    "gptlab_drills.pt02",
    [(
        "    row_ids, col_ids = valid.nonzero(as_tuple=True)",
        "    col_ids, row_ids = valid.t().nonzero(as_tuple=True)",
    )],
)  # fmt: skip
globals().update(export_with("gptlab_drills.pt02", pt02))
