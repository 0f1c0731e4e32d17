"""PT26 batched multi-LoRA linear (transfer case; owner M04).

One batch mixes requests of several LoRA adapters (and some of none). Row n uses adapter
a = adapter_ids[n], or only the base layer when a == -1:

    out[n] = x[n] @ W.T + bias + scales[a] * (x[n] @ A[a].T) @ B[a].T      (a >= 0)
    out[n] = x[n] @ W.T + bias                                          (a == -1)

The base layer runs once for the whole batch; each adapter present runs once on the rows
that use it (grouping: one [n_a, I] x [I, R] x [R, O] product per adapter, never every
adapter on every row), and its rows are added back at their original places. Half
precision is computed in fp32 and cast back.

Shapes: x [N, I]; adapter_ids [N] integer in [-1, A); weight [O, I]; bias [O] or None;
a_bank [A, R, I]; b_bank [A, O, R]; scales [A] -> [N, O] (x's dtype and device).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from ._describe import described


def multi_lora_linear(
    x: Tensor,
    adapter_ids: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    a_bank: Tensor,
    b_bank: Tensor,
    scales: Tensor,
) -> Tensor:
    """The base linear for every row plus each row's own scaled low-rank update -> [N, O]."""
    _check(x, adapter_ids, weight, bias, a_bank, b_bank, scales)
    wide = torch.float64 if x.dtype == torch.float64 else torch.float32
    xs = x.to(wide)
    out = F.linear(xs, weight.to(wide), None if bias is None else bias.to(wide))
    for adapter in torch.unique(adapter_ids[adapter_ids >= 0]).tolist():
        rows = (adapter_ids == adapter).nonzero().squeeze(1)  # this adapter's rows, in order
        low = xs[rows] @ a_bank[adapter].to(wide).T  # [n_a, R]
        update = (low @ b_bank[adapter].to(wide).T) * scales[adapter].to(wide)  # [n_a, O]
        out.index_add_(0, rows, update)
    return out.to(x.dtype)


def _check(
    x: Tensor,
    ids: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    a_bank: Tensor,
    b_bank: Tensor,
    scales: Tensor,
) -> None:
    """Reject kinds, shapes, dtypes, unknown adapters and rank mismatches before computing."""
    floating = {"x": x, "weight": weight, "a_bank": a_bank, "b_bank": b_bank, "scales": scales}
    if bias is not None:
        floating["bias"] = bias
    for name, tensor in floating.items():
        if not isinstance(tensor, Tensor) or tensor.dtype != getattr(x, "dtype", None):
            raise ValueError(f"{name} must be a tensor of x's dtype, got {described(tensor)}")
        if not tensor.is_floating_point() or tensor.device != x.device:
            raise ValueError(f"{name} must be floating and on x's device, got {described(tensor)}")
    if not isinstance(ids, Tensor) or ids.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"adapter_ids must be an int32/int64 tensor, got {described(ids)}")
    if x.dim() != 2 or weight.dim() != 2 or weight.shape[1] != x.shape[1]:
        shapes = f"{described(x)}, {described(weight)}"
        raise ValueError(f"x [N, I] and weight [O, I] disagree: {shapes}")
    if ids.shape != x.shape[:1] or ids.device != x.device:
        raise ValueError(f"adapter_ids must be [{x.shape[0]}] on x's device, got {described(ids)}")
    out_features, in_features = weight.shape
    if bias is not None and bias.shape != (out_features,):
        raise ValueError(f"bias must be [{out_features}], got {described(bias)}")
    if a_bank.dim() != 3 or a_bank.shape[2] != in_features:
        raise ValueError(f"a_bank must be [A, R, {in_features}], got {described(a_bank)}")
    A, R, _ = a_bank.shape
    if b_bank.shape != (A, out_features, R):  # the rank (and A, O) must agree with a_bank's
        want = f"[{A}, {out_features}, {R}]"
        raise ValueError(f"b_bank must be {want} (a_bank's rank R), got {described(b_bank)}")
    if scales.shape != (A,):
        raise ValueError(f"scales must be [{A}], got {described(scales)}")
    if bool(((ids < -1) | (ids >= A)).any()):
        raise ValueError(f"adapter_ids must lie in [-1, {A}), got {ids.tolist()}")


__all__ = ["multi_lora_linear"]
