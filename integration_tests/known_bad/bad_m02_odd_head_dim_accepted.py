"""An odd head_dim is accepted by the config."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_config"
CLAUSE = "M02.7"
SCOPE = "all"  # M02.7 is an extension clause: only extension tests catch it

config = mutated_module("modern_lm.config", [("if self.head_dim % 2 != 0:", "if False:")])
attention = mutated_module("modern_lm.attention", rebind={"ModernLMConfig": config.ModernLMConfig})
model = mutated_module(
    "modern_lm.model",
    rebind={
        "ModernLMConfig": config.ModernLMConfig,
        "GroupedQueryAttention": attention.GroupedQueryAttention,
    },
)
globals().update(export_with("modern_lm", model, ModernLMConfig=config.ModernLMConfig))
