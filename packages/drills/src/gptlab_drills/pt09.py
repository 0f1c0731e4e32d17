"""PT09 strict fused-QKV loader (transfer case; owner M09).

FusedQKV(in_features, q_rows, kv_rows, bias) holds one fused projection `qkv`, an
nn.Linear(in_features, q_rows + 2 * kv_rows, bias=bias); forward(x) = qkv(x). Its
`load_qkv_(source, transposed=False)` fills it from a checkpoint written with three separate
linears, rows in Q, K, V order:

    qkv.weight[:q] = q_proj.weight;  [q:q+kv] = k_proj.weight;  [q+kv:] = v_proj.weight

and the same for `*.bias` when the module has a bias (the explicit contract: a biased
module needs all three biases, a bias-free one refuses any). `source` is a mapping or an
iterable of (name, tensor) pairs (a shard iterator), so a name may come twice: refused.
Strict: exactly the expected names, each a tensor of the target's dtype and shape; a
source is [rows, in_features] unless `transposed=True` declares a Conv1D-style checkpoint
stored [in_features, rows]. Everything is checked before the first write; the copy is in
place under no_grad, so the Parameters (and an optimizer holding them) are kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import torch
from torch import Tensor, nn

from ._describe import described

PARTS = ("q_proj", "k_proj", "v_proj")


class FusedQKV(nn.Module):
    def __init__(self, in_features: int, q_rows: int, kv_rows: int, bias: bool) -> None:
        super().__init__()
        self.q_rows, self.kv_rows = q_rows, kv_rows
        self.qkv = nn.Linear(in_features, q_rows + 2 * kv_rows, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        out: Tensor = self.qkv(x)
        return out

    def load_qkv_(
        self, source: Mapping[str, Tensor] | Iterable[tuple[str, Tensor]], transposed: bool = False
    ) -> None:
        """Copy q_proj/k_proj/v_proj (weight, and bias if the module has one) into qkv."""
        entries = _unique_entries(source)
        targets = self._targets()
        _check_names(set(entries), set(targets))
        pieces = {name: _oriented(name, entries[name], transposed) for name in targets}
        for name, (fused, rows) in targets.items():
            _check_tensor(name, pieces[name], fused[rows])
        with torch.no_grad():
            for name, (fused, rows) in targets.items():
                fused[rows].copy_(pieces[name])

    def _targets(self) -> dict[str, tuple[Tensor, slice]]:
        """Each expected name -> (the fused tensor, its rows there), in Q, K, V order."""
        q, kv = self.q_rows, self.kv_rows
        rows = dict(
            zip(PARTS, (slice(0, q), slice(q, q + kv), slice(q + kv, q + 2 * kv)), strict=True)
        )
        kinds = [("weight", self.qkv.weight)]
        if self.qkv.bias is not None:
            kinds.append(("bias", self.qkv.bias))
        return {f"{part}.{kind}": (fused, rows[part]) for kind, fused in kinds for part in PARTS}


def _unique_entries(source: object) -> dict[str, object]:
    pairs = source.items() if isinstance(source, Mapping) else source
    if not isinstance(pairs, Iterable) or isinstance(pairs, (str, bytes, Tensor)):
        raise ValueError(f"source must be a mapping or (name, tensor) pairs: {described(source)}")
    entries: dict[str, object] = {}
    for pair in pairs:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2 or not isinstance(pair[0], str):
            raise ValueError(f"source must hold (name, tensor) pairs, got {described(pair)}")
        if pair[0] in entries:
            raise ValueError(f"source holds {pair[0]} twice")
        entries[pair[0]] = pair[1]
    return entries


def _check_names(given: set[str], expected: set[str]) -> None:
    missing, unexpected = sorted(expected - given), sorted(given - expected)
    if missing or unexpected:
        raise ValueError(f"source does not fit: missing {missing}, unexpected {unexpected}")


def _oriented(name: str, value: object, transposed: bool) -> Tensor:
    if not isinstance(value, Tensor):
        raise ValueError(f"{name} must be a tensor, got {described(value)}")
    return value.transpose(0, 1) if transposed and value.dim() == 2 else value


def _check_tensor(name: str, value: Tensor, target: Tensor) -> None:
    if value.dtype != target.dtype:
        raise ValueError(f"{name} is {value.dtype}, the fused target {target.dtype}")
    if value.shape != target.shape:
        raise ValueError(f"{name} has shape {tuple(value.shape)}, want {tuple(target.shape)}")


__all__ = ["FusedQKV"]
