"""Every row keeps the union of all rows' allowed ids: the flat list is scattered into every
row at once, the offsets never read."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT29_MODULE"
EXPECTED_OWNER = "pt29"

pt29 = mutated_module(
    "gptlab_drills.pt29",
    [("    keep[rows, allowed_ids.long()] = True", "    keep[:, allowed_ids.long()] = True")],
)
globals().update(export_with("gptlab_drills.pt29", pt29))
