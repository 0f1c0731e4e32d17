"""EOS stops the whole batch as soon as the first row finishes, cutting the other rows short."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "eos_context"

generation = mutated_module("tinygpt.generation", [("finished.all()", "finished.any()")])
model = mutated_module("tinygpt.model", rebind={"generate": generation.generate})
globals().update(export_with("tinygpt", model))
