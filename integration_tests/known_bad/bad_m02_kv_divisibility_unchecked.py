"""num_attention_heads is never checked for divisibility by num_key_value_heads."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_config"
CLAUSE = "M02.6"

config = mutated_module(
    "modern_lm.config",
    [("if self.num_attention_heads % self.num_key_value_heads != 0:", "if False:")],
)
attention = mutated_module("modern_lm.attention", rebind={"ModernLMConfig": config.ModernLMConfig})
model = mutated_module(
    "modern_lm.model",
    rebind={
        "ModernLMConfig": config.ModernLMConfig,
        "GroupedQueryAttention": attention.GroupedQueryAttention,
    },
)
globals().update(export_with("modern_lm", model, ModernLMConfig=config.ModernLMConfig))
