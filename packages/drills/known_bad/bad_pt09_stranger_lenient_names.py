"""A stranger's loader that takes what it needs and ignores the rest: extra keys, a second copy
of a name (the last wins) and a stray bias all load without a word."""

import torch
from torch import nn

VARIABLE = "DRILL_PT09_MODULE"
EXPECTED_OWNER = "pt09"


class FusedQKV(nn.Module):
    def __init__(self, in_features, q_rows, kv_rows, bias):
        super().__init__()
        self.q_rows, self.kv_rows = q_rows, kv_rows
        self.qkv = nn.Linear(in_features, q_rows + 2 * kv_rows, bias=bias)

    def forward(self, x):
        return self.qkv(x)

    def load_qkv_(self, source, transposed=False):
        state = dict(source.items() if hasattr(source, "items") else source)
        kinds = ["weight"] + (["bias"] if self.qkv.bias is not None else [])
        fused = {}
        for kind in kinds:
            parts = []
            for part in ("q_proj", "k_proj", "v_proj"):
                name = f"{part}.{kind}"
                if name not in state:
                    raise ValueError(f"{name} is missing")
                value = state[name]
                if transposed and value.dim() == 2:
                    value = value.T
                parts.append(value)
            fused[kind] = torch.cat(parts)
            target = getattr(self.qkv, kind)
            if fused[kind].shape != target.shape or fused[kind].dtype != target.dtype:
                raise ValueError(f"{kind}: q_proj/k_proj/v_proj.{kind} do not fit {target.shape}")
        with torch.no_grad():
            for kind, value in fused.items():
                getattr(self.qkv, kind).copy_(value)
