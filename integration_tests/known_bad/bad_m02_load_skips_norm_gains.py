"""A strict load keeps the model's own norm gains: the checkpoint's are dropped."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_checkpoint"
CLAUSE = "M02.14"

model = mutated_module(
    "modern_lm.model",
    [
        (
            "result = atomic_load(self, state_dict, strict=strict, assign=assign)",
            "result = atomic_load(\n            self, {k: v for k, v in state_dict.items() if not k.endswith('norm.weight')}, strict=False, assign=assign\n        )",
        )
    ],
)
globals().update(export_with("modern_lm", model))
