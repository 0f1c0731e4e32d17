"""Router logits and counts come back on every call, asked for or not."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "FRAGMENT_LM_MODULE"
EXPECTED_OWNER = "fragment_router"
CLAUSE = "M10.7"

model = mutated_module(
    "fragment_lm.model",
    [("if not return_router_state:", "if not (return_router_state or True):")],
)
globals().update(export_with("fragment_lm", model))
