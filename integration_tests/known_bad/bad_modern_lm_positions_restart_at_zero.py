"""Supplied positions ignored: every call rotates by token index, restarting at 0."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_rope"

model = mutated_module(
    "modern_lm.model",
    [
        (
            "cos, sin = self.rotary_emb(positions, x.dtype)",
            "cos, sin = self.rotary_emb(torch.arange(x.shape[1], device=x.device).expand(x.shape[:2]), x.dtype)",
        )
    ],
)
globals().update(export_with("modern_lm", model))
