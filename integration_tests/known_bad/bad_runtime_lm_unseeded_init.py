"""Projections are initialised from a fresh, unseeded generator."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "RUNTIME_LM_MODULE"
EXPECTED_OWNER = "runtime_interface"
CLAUSE = "M04.13"

model = mutated_module(
    "runtime_lm.model",
    [
        (
            "nn.init.normal_(module.weight, std=INITIALIZER_RANGE)",
            "nn.init.normal_(module.weight, std=INITIALIZER_RANGE, "
            "generator=torch.Generator().manual_seed(torch.seed()))",
        )
    ],
)
globals().update(export_with("runtime_lm", model))
