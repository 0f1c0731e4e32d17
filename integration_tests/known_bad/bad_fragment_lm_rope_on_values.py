"""The values are rotated too: RoPE belongs on queries and keys only."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "FRAGMENT_LM_MODULE"
EXPECTED_OWNER = "fragment_decoder"
CLAUSE = "M10.2"

layers = mutated_module(
    "fragment_lm.layers",
    [
        (
            "v = self._heads(self.v_proj(x), self.n_kv_heads)",
            "v = apply_rotary(self._heads(self.v_proj(x), self.n_kv_heads), cos, sin)",
        )
    ],
)
model = mutated_module("fragment_lm.model", rebind={"FragmentLayer": layers.FragmentLayer})
globals().update(export_with("fragment_lm", model))
