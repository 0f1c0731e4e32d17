"""The loader packs q, v, k instead of q, k, v: v's rows land where k's belong."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "RUNTIME_LM_MODULE"
EXPECTED_OWNER = "runtime_loading"
CLAUSE = "M04.8"

loading = mutated_module(
    "runtime_lm.loading",
    [
        (
            'p + "self_attn.k_proj.weight": (kv, C),\n                p + "self_attn.v_proj.weight": (kv, C),',
            'p + "self_attn.v_proj.weight": (kv, C),\n                p + "self_attn.k_proj.weight": (kv, C),',
        )
    ],
)
model = mutated_module("runtime_lm.model", rebind={"load_weights": loading.load_weights})
globals().update(export_with("runtime_lm", model))
