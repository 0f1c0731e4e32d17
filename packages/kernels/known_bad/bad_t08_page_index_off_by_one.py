"""The page index is off by one: logical page blk is read from table entry blk + 1, the next
page of the row (and, for its last page, the -1 of an unallocated entry)."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_T08_MODULE"
EXPECTED_OWNER = "t08"

t08 = mutated_module(
    "gptlab_kernels.t08",
    [
        (
            "phys = tl.load(bt_ptr + b * sbt0 + blk * sbt1)",
            "phys = tl.load(bt_ptr + b * sbt0 + (blk + 1) * sbt1)",
        )
    ],
)
globals().update(export_with("gptlab_kernels.t08", t08))
