"""forward applies the head itself (returns logits) and compute_logits passes rows through."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "RUNTIME_LM_MODULE"
EXPECTED_OWNER = "runtime_logits"
CLAUSE = "M04.11"

model = mutated_module(
    "runtime_lm.model",
    [
        (
            "        return out\n\n    def compute_logits",
            "        return self.lm_head(out) if self.config.last_stage else out\n\n    def compute_logits",
        ),
        ("logits: Tensor = self.lm_head(hidden_states)", "logits: Tensor = hidden_states"),
    ],
)
globals().update(export_with("runtime_lm", model))
