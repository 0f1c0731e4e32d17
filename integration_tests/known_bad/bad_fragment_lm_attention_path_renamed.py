"""The attention module is registered as `attn`: its checkpoint names are
model.layers.N.attn.*, not Llama's self_attn.*, so a loader's names no longer fit."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "FRAGMENT_LM_MODULE"
EXPECTED_OWNER = "fragment_interface"
CLAUSE = "M10.9"

layers = mutated_module(
    "fragment_lm.layers",
    [
        ("self.self_attn = CachedAttention(config)", "self.attn = CachedAttention(config)"),
        ("self.self_attn.forward_cached(", "self.attn.forward_cached("),
    ],
)
model = mutated_module("fragment_lm.model", rebind={"FragmentLayer": layers.FragmentLayer})
globals().update(export_with("fragment_lm", model))
