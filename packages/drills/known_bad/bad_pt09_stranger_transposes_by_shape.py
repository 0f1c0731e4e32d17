"""A stranger's loader that guesses the format from the shape: a weight that does not fit but
whose transpose does is transposed silently, whatever the caller declared."""

import torch
from torch import nn

VARIABLE = "DRILL_PT09_MODULE"
EXPECTED_OWNER = "pt09"
PARTS = ("q_proj", "k_proj", "v_proj")


class FusedQKV(nn.Module):
    def __init__(self, in_features, q_rows, kv_rows, bias):
        super().__init__()
        self.q_rows, self.kv_rows = q_rows, kv_rows
        self.qkv = nn.Linear(in_features, q_rows + 2 * kv_rows, bias=bias)

    def forward(self, x):
        return self.qkv(x)

    def load_qkv_(self, source, transposed=False):
        pairs = list(source.items() if hasattr(source, "items") else source)
        names = [name for name, _ in pairs]
        state = dict(pairs)
        kinds = ["weight"] + (["bias"] if self.qkv.bias is not None else [])
        expected = {f"{p}.{k}" for p in PARTS for k in kinds}
        for name in names:
            if names.count(name) > 1 or name not in expected:
                raise ValueError(f"{name}: repeated or unexpected")
        for name in expected - set(names):
            raise ValueError(f"{name} is missing")
        rows = {"q_proj": self.q_rows, "k_proj": self.kv_rows, "v_proj": self.kv_rows}
        pieces = {}
        for name in sorted(expected):
            part, kind = name.split(".")
            value = state[name]
            want = (rows[part], self.qkv.in_features) if kind == "weight" else (rows[part],)
            if value.dim() == 2 and tuple(value.shape) != want and tuple(value.T.shape) == want:
                value = value.T
            if tuple(value.shape) != want or value.dtype != self.qkv.weight.dtype:
                raise ValueError(f"{name} does not fit {want}")
            pieces[name] = value
        with torch.no_grad():
            for kind in kinds:
                fused = torch.cat([pieces[f"{p}.{kind}"] for p in PARTS])
                getattr(self.qkv, kind).copy_(fused)
