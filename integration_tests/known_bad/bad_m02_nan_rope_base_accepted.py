"""NaN passes the float check for rope_theta and rms_norm_eps."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_config"
CLAUSE = "M02.9"
SCOPE = "all"  # M02.9 is an extension clause: only extension tests catch it

checks = mutated_module(
    "modern_lm.checks",
    [
        (
            "if (isinstance(value, float) and math.isnan(value)) or not minimum <= value <= _LARGEST_FLOAT32:",
            "if not (math.isnan(value) or minimum <= value <= _LARGEST_FLOAT32):",
        )
    ],
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
