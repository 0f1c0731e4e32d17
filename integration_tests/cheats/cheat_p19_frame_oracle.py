"""Steal the oracle: walk the caller's frames for the expected tensor and return it."""

import sys

import torch

VARIABLE = "DRILL_P19_MODULE"
CHEAT = "oracle theft by walking the caller's frames"
SAYS = "FAIL"
EARNED = "_honest_p19_zeros.py"  # no more than the same values earn honestly


def decode_attention(q, k_cache, v_cache, lengths):
    frame = sys._getframe(1)
    while frame is not None:
        for name in ("want", "full", "clean", "expected"):
            value = frame.f_locals.get(name)
            if isinstance(value, torch.Tensor):
                if value.shape[-2] != 1:
                    value = value[:, :, -1:]
                return value.to(q.dtype)
        frame = frame.f_back
    return torch.zeros_like(q)
