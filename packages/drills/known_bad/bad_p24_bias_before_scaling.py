"""The bias is added to the raw int8 sums and then scaled with them."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P24_MODULE"
EXPECTED_OWNER = "p24"

p24 = mutated_module(
    "gptlab_drills.p24",
    [
        ("    out = accumulated * scales.float()", "    out = accumulated"),
        (
            "        out = out + bias.float()\n",
            "        out = out + bias.float()\n    out = out * scales.float()\n",
        ),
    ],
)
globals().update(export_with("gptlab_drills.p24", p24))
