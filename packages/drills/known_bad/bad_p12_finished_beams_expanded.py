"""Finished beams are expanded like live ones: a completed hypothesis multiplies into V
continuations instead of carrying EOS at its score."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P12_MODULE"
EXPECTED_OWNER = "p12"

p12 = mutated_module(
    "gptlab_drills.p12",
    [("candidates = torch.where(finished[:, :, None], only_eos, candidates)", "pass")],
)
globals().update(export_with("gptlab_drills.p12", p12))
