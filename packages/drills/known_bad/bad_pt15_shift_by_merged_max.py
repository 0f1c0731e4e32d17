"""Each side is rescaled by exp(m_x - m) with m the merged max as it is: two empty parts
give exp(-inf - (-inf)) = NaN."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT15_MODULE"
EXPECTED_OWNER = "pt15"

pt15 = mutated_module(
    "gptlab_drills.pt15",
    [("    shift = torch.where(m.isfinite(), m, 0.0)", "    shift = m")],
)
globals().update(export_with("gptlab_drills.pt15", pt15))
