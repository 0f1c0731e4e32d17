"""A stranger's PT09 from the kit's row alone: the pairs walked once into a dict (a repeat
refused on sight), names compared as sets, TypeError for an entry that is no tensor, the
whole fused matrix built with torch.cat and written with one copy_ per Parameter."""

import torch
from torch import nn

VARIABLE = "DRILL_PT09_MODULE"


class FusedQKV(nn.Module):
    def __init__(self, in_features, q_rows, kv_rows, bias):
        super().__init__()
        self.q_rows, self.kv_rows = q_rows, kv_rows
        self.qkv = nn.Linear(in_features, q_rows + 2 * kv_rows, bias=bias)

    def forward(self, x):
        return self.qkv(x)

    def load_qkv_(self, source, transposed=False):
        items = source.items() if isinstance(source, dict) else source
        state = {}
        for name, value in items:
            if name in state:
                raise ValueError(f"duplicate entry {name}")
            state[name] = value
        kinds = ("weight", "bias") if self.qkv.bias is not None else ("weight",)
        wanted = [f"{p}_proj.{k}" for k in kinds for p in "qkv"]
        for name in sorted(set(state) ^ set(wanted)):
            raise ValueError(f"{name} is {'unexpected' if name in state else 'missing'}")
        rows = {"q": self.q_rows, "k": self.kv_rows, "v": self.kv_rows}
        fused = {}
        for kind in kinds:
            blocks = []
            for p in "qkv":
                name = f"{p}_proj.{kind}"
                value = state[name]
                if not torch.is_tensor(value):
                    raise TypeError(f"{name} is a {type(value).__name__}")
                if kind == "weight" and transposed:
                    if value.dim() != 2:
                        raise ValueError(f"{name} must be 2-D")
                    value = value.t()
                shape = (rows[p], self.qkv.in_features) if kind == "weight" else (rows[p],)
                if tuple(value.shape) != shape:
                    raise ValueError(f"{name}: shape {tuple(value.shape)} != {shape}")
                if value.dtype != self.qkv.weight.dtype:
                    raise ValueError(f"{name}: dtype {value.dtype}")
                blocks.append(value)
            fused[kind] = torch.cat(blocks)
        with torch.no_grad():
            for kind, value in fused.items():
                getattr(self.qkv, kind).copy_(value)
