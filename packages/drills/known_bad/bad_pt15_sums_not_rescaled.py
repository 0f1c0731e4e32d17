"""The exp-sums are added as they are, l = l_a + l_b, without rescaling each to the merged
max (the outputs are still weighted correctly)."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT15_MODULE"
EXPECTED_OWNER = "pt15"

pt15 = mutated_module(
    "gptlab_drills.pt15",
    [
        (
            "    total = w_a + w_b\n",
            "    total = w_a + w_b\n    unscaled = l_a.to(work) + l_b.to(work)\n",
        ),
        ("    return m, total, o.to(o_a.dtype)", "    return m, unscaled, o.to(o_a.dtype)"),
    ],
)
globals().update(export_with("gptlab_drills.pt15", pt15))
