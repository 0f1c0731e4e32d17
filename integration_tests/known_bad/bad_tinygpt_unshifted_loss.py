"""Loss without the shift: logits at t are scored against labels at t (the current token)."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "loss_shift"

unshifted = [
    ("logits[:, :-1].reshape", "logits.reshape"),
    ("labels[:, 1:].reshape", "labels.reshape"),
]
model = mutated_module("tinygpt.model", unshifted, within="shifted_cross_entropy")
globals().update(export_with("tinygpt", model))
