"""A later pipeline stage starts one layer late: the layer at the seam runs on no stage."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "RUNTIME_LM_MODULE"
EXPECTED_OWNER = "runtime_pipeline"
CLAUSE = "M04.7"

config = mutated_module(
    "runtime_lm.config",
    [
        (
            "return range(r * L // P, (r + 1) * L // P)",
            "return range(r * L // P + (r > 0), (r + 1) * L // P)",
        )
    ],
)
model = mutated_module("runtime_lm.model", rebind={"RuntimeLMConfig": config.RuntimeLMConfig})
globals().update(export_with("runtime_lm", model, RuntimeLMConfig=config.RuntimeLMConfig))
