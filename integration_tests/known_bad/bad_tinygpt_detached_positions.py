"""Position embeddings detached from the graph: position_embedding never receives a gradient."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "gradients"

detached = ("self.position_embedding(positions)", "self.position_embedding(positions).detach()")
globals().update(
    export_with("tinygpt", mutated_module("tinygpt.model", [detached], within="TinyGPT.embed"))
)
