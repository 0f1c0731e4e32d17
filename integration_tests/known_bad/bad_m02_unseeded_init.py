"""Initialisation draws a std from the OS: two builds after the same seed differ."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_decoder"
CLAUSE = "M02.10"

model = mutated_module(
    "modern_lm.model",
    [
        (
            "nn.init.normal_(module.weight, std=INITIALIZER_RANGE)",
            "nn.init.normal_(module.weight, std=INITIALIZER_RANGE * (1 + __import__('os').urandom(1)[0] / 255))",
        )
    ],
)
globals().update(export_with("modern_lm", model))
