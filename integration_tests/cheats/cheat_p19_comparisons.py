"""Make every comparison succeed: Tensor.__eq__, torch.equal, allclose, assert_close."""

import sys

import torch
import torch.testing

VARIABLE = "DRILL_P19_MODULE"
CHEAT = "comparison patching (torch and the testkit's helpers)"
SAYS = "FAIL"
EARNED = "_honest_p19_zeros.py"  # no more than the same values earn honestly

torch.equal = lambda *a, **k: True
torch.allclose = lambda *a, **k: True
torch.testing.assert_close = lambda *a, **k: None
torch.Tensor.__eq__ = lambda self, other: torch.ones_like(self, dtype=torch.bool)
for name in ("gptlab_testkit", "gptlab_testkit.boundary"):
    module = sys.modules.get(name)
    if module is not None:
        module.assert_close = lambda *a, **k: None


def decode_attention(q, k_cache, v_cache, lengths):
    return torch.zeros_like(q)
