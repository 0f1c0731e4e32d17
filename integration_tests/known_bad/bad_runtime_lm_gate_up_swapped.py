"""The merged projection is split as (up, gate): SiLU goes on the up branch."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "RUNTIME_LM_MODULE"
EXPECTED_OWNER = "runtime_loading"
CLAUSE = "M04.9"

layers = mutated_module(
    "runtime_lm.layers",
    [
        (
            "gate, up = self.gate_up_proj(x).chunk(2, dim=-1)",
            "up, gate = self.gate_up_proj(x).chunk(2, dim=-1)",
        )
    ],
)
model = mutated_module(
    "runtime_lm.model", rebind={"RuntimeDecoderLayer": layers.RuntimeDecoderLayer}
)
globals().update(export_with("runtime_lm", model))
