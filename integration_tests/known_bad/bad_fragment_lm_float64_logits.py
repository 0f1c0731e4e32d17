"""The head computes in float64 "for accuracy" and returns float64 logits from a float32
model: the contract's logits are float32."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "FRAGMENT_LM_MODULE"
EXPECTED_OWNER = "fragment_interface"
CLAUSE = "M10.1"

model = mutated_module(
    "fragment_lm.model",
    [
        (
            "logits: Tensor = self.lm_head(self.model.norm(x))",
            "logits: Tensor = self.model.norm(x).double() @ self.lm_head.weight.double().T",
        )
    ],
)
globals().update(export_with("fragment_lm", model))
