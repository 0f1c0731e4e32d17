"""storage_offset is reported in bytes (offset times element size), not in elements."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P01_MODULE"
EXPECTED_OWNER = "p01"

p01 = mutated_module(
    "gptlab_drills.p01",
    [
        (
            '"storage_offset": x.storage_offset(),',
            '"storage_offset": x.storage_offset() * x.element_size(),',
        )
    ],
)
globals().update(export_with("gptlab_drills.p01", p01))
