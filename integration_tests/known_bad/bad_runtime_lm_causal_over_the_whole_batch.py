"""Attention is causal over the whole flat batch: the context's request offsets are ignored."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "RUNTIME_LM_MODULE"
EXPECTED_OWNER = "runtime_rows"
CLAUSE = "M04.3"

layers = mutated_module(
    "runtime_lm.layers", [("attn_mask=causal_mask(N, x.device),", "is_causal=True,")]
)
model = mutated_module(
    "runtime_lm.model", rebind={"RuntimeDecoderLayer": layers.RuntimeDecoderLayer}
)
globals().update(export_with("runtime_lm", model))
