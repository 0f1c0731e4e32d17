"""Sampler ignores the generator: torch.multinomial draws from the global RNG."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "sampler_determinism"

generation = mutated_module("tinygpt.generation", [("1, generator=generator)", "1)")])
model = mutated_module("tinygpt.model", rebind={"generate": generation.generate})
globals().update(export_with("tinygpt", model))
