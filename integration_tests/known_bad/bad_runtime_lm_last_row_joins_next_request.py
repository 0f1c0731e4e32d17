"""Rows are assigned to requests with the wrong side of the offsets: each request's last
row is counted in the next request (a padded/flat boundary off by one)."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "RUNTIME_LM_MODULE"
EXPECTED_OWNER = "runtime_rows"
CLAUSE = "M04.4"

context = mutated_module(
    "runtime_lm.context",
    [
        (
            "torch.searchsorted(offsets[1:].to(device), index, right=True)",
            "torch.searchsorted(offsets[1:].to(device), index + 1, right=True)",
        )
    ],
)
layers = mutated_module("runtime_lm.layers", rebind={"causal_mask": context.causal_mask})
model = mutated_module(
    "runtime_lm.model", rebind={"RuntimeDecoderLayer": layers.RuntimeDecoderLayer}
)
globals().update(export_with("runtime_lm", context, model))
