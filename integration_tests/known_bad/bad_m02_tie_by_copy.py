"""The tied head is a copy of the embedding, not the same Parameter."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_registration"
CLAUSE = "M02.21"

model = mutated_module(
    "modern_lm.model",
    [
        (
            "self.lm_head.weight = self.model.embed_tokens.weight  # one Parameter",
            "self.lm_head.weight = nn.Parameter(self.model.embed_tokens.weight.detach().clone())",
        )
    ],
)
globals().update(export_with("modern_lm", model))
