"""generate switches to eval mode and never restores the caller's training mode."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "greedy_decoding"

generation = mutated_module("tinygpt.generation", [("model.train(was_training)", "pass")])
model = mutated_module("tinygpt.model", rebind={"generate": generation.generate})
globals().update(export_with("tinygpt", model))
