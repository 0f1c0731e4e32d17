"""-100 labels scored: ignored positions are clamped to token 0 and counted in the mean."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "loss_shift"

# "make the labels valid indices": no label is -100 any more, so none is skipped
clamped = ("labels[:, 1:].reshape(-1)", "labels[:, 1:].clamp(min=0).reshape(-1)")
model = mutated_module("tinygpt.model", [clamped], within="shifted_cross_entropy")
globals().update(export_with("tinygpt", model))
