"""load_weights never checks for missing weights: it copies what came until one is absent."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "RUNTIME_LM_MODULE"
EXPECTED_OWNER = "runtime_loading"
CLAUSE = "M04.10"

loading = mutated_module(
    "runtime_lm.loading",
    [
        (
            '    problems += [f"missing weight {name}" for name in wanted if name not in given]\n',
            "",
        )
    ],
)
model = mutated_module("runtime_lm.model", rebind={"load_weights": loading.load_weights})
globals().update(export_with("runtime_lm", model))
