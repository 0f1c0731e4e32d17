"""moe_layers is ignored: every layer gets the mixture."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MOE_LM_MODULE"
EXPECTED_OWNER = "moe_model"
CLAUSE = "M05.14"

config = mutated_module(
    "moe_lm.config",
    [
        ("return self.moe_layers is None or index in self.moe_layers", "return True"),
    ],
)
model = mutated_module("moe_lm.model", rebind={"MoELMConfig": config.MoELMConfig})
globals().update(export_with("moe_lm", model, MoELMConfig=config.MoELMConfig))
