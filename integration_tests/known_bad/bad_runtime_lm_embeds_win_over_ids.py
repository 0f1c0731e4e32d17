"""Given both input_ids and inputs_embeds, the first stage silently uses the embeddings."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "RUNTIME_LM_MODULE"
EXPECTED_OWNER = "runtime_rows"
CLAUSE = "M04.6"

model = mutated_module(
    "runtime_lm.model",
    [
        (
            "if (input_ids is None) == (inputs_embeds is None):",
            "if input_ids is None and inputs_embeds is None:",
        )
    ],
)
globals().update(export_with("runtime_lm", model))
