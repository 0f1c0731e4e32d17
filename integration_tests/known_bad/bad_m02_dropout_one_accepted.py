"""A dropout of 1.0 passes (`<= 1` for `< 1`)."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_config"
CLAUSE = "M02.8"
SCOPE = "all"  # M02.8 is an extension clause: only extension tests catch it

checks = mutated_module(
    "modern_lm.checks", [("if not 0.0 <= value < 1.0:", "if not 0.0 <= value <= 1.0:")]
)
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
