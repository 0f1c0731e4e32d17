"""The rotary base is the default 10000, not the config's rope_theta (where Llama keeps it)."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "RUNTIME_LM_MODULE"
EXPECTED_OWNER = "runtime_rows"
CLAUSE = "M04.12"

layers = mutated_module(
    "runtime_lm.layers",
    [("RotaryEmbedding(D, config.rope_theta)", "RotaryEmbedding(D, 10000.0)")],
)
model = mutated_module(
    "runtime_lm.model", rebind={"RuntimeDecoderLayer": layers.RuntimeDecoderLayer}
)
globals().update(export_with("runtime_lm", model))
