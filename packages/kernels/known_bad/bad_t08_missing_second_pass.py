"""The split-K second pass is missing: the merge takes the first split's partial alone, so a
row longer than one split's pages loses every page after them."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_T08_MODULE"
EXPECTED_OWNER = "t08"

t08 = mutated_module(
    "gptlab_kernels.t08",
    [
        ("for split in range(0, splits):\n        top", "for split in range(0, 1):\n        top"),
        ("for split in range(0, splits):\n        slot", "for split in range(0, 1):\n        slot"),
    ],
)
globals().update(export_with("gptlab_kernels.t08", t08))
