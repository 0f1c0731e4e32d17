"""A size of 0 passes the positivity check (`< 0` for `<= 0`)."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_config"
CLAUSE = "M02.3"

checks = mutated_module("modern_lm.checks", [("if value <= 0:", "if value < 0:")])
config = mutated_module(
    "modern_lm.config",
    rebind={
        "check_size": checks.check_size,
        "check_float": checks.check_float,
        "check_probability": checks.check_probability,
    },
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
