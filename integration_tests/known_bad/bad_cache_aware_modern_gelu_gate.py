"""The gated MLP puts GELU on the gate branch where M02's SwiGLU has SiLU."""

from __future__ import annotations

from torch.nn import functional

from gptlab_testkit.mutants import export_with, mutated_module
from modern_lm import SwiGLU

VARIABLE = "CACHE_AWARE_MODERN_MODULE"
EXPECTED_OWNER = "m03_logits"
CLAUSE = "M03.4"


class GeGLU(SwiGLU):
    def forward(self, x):
        # mistake: GELU, not SiLU
        return self.down_proj(functional.gelu(self.gate_proj(x)) * self.up_proj(x))


advanced = mutated_module("cache_aware_lm.advanced", rebind={"SwiGLU": GeGLU})
globals().update(export_with("cache_aware_lm.advanced", advanced))
