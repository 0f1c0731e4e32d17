"""inputs_embeds are scaled by sqrt(hidden_size) (a Gemma habit) while ids are not."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "RUNTIME_LM_MODULE"
EXPECTED_OWNER = "runtime_rows"
CLAUSE = "M04.5"

model = mutated_module(
    "runtime_lm.model",
    [
        (
            "        return inputs_embeds\n",
            "        return inputs_embeds * self.config.hidden_size**0.5\n",
        )
    ],
)
globals().update(export_with("runtime_lm", model))
