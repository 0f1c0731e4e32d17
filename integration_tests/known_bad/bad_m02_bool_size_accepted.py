"""A size is not checked for its kind: True, 2.0 and "40" pass as ints."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_config"
CLAUSE = "M02.4"
SCOPE = "all"  # M02.4 is an extension clause: only extension tests catch it

checks = mutated_module(
    "modern_lm.checks",
    [
        (
            'if isinstance(value, bool) or not isinstance(value, int):\n        raise ArgumentTypeError(f"{name} must be an int, got {value!r}")\n    if value <= 0:',
            "if isinstance(value, int | float) and value <= 0:",
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
