"""PT14 all-masked logsumexp (transfer case; owner P08).

Along `dim`, over the entries where `valid` is True only:

    lse     = log(sum of exp(x) over the valid entries)   (-inf for a slice with none)
    weights = exp(x - lse) at valid entries, 0 at masked ones
    empty   = True where the slice has no valid entry

A fully masked slice is explicit, never NaN: lse -inf, every weight 0, empty True. That
tells it apart from a slice whose valid entries are all a genuine -inf (lse -inf, weights
0, empty False). A +inf entry gives lse +inf and shares the slice's weight with any other
+inf entries. Worked in fp32 or wider; results in x's dtype.

Shapes: x [...] floating; valid bool of x's shape; dim an int (negative counts from the
end) -> (lse, weights, empty): lse and empty have x's shape without `dim` (kept as size 1
with keepdim=True), weights has x's shape.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described


def masked_logsumexp(
    x: Tensor, valid: Tensor, dim: int, *, keepdim: bool = False
) -> tuple[Tensor, Tensor, Tensor]:
    """(lse, weights, empty) over the valid entries along dim; no NaN for an empty slice."""
    _check(x, valid, dim, keepdim)
    work = x.to(torch.promote_types(x.dtype, torch.float32)).masked_fill(~valid, -torch.inf)
    top = work.amax(dim=dim, keepdim=True)  # -inf for an empty or all -inf slice
    shifted = torch.exp(work - torch.where(top.isfinite(), top, 0.0))
    exps = torch.where(top == torch.inf, (work == torch.inf).to(work.dtype), shifted)
    total = exps.sum(dim=dim, keepdim=True)  # 0 exactly where no valid entry has mass
    lse = top + total.log()  # -inf + log 0 = -inf: an explicit empty result, never NaN
    weights = torch.where(total > 0, exps / total, 0.0)
    empty = ~valid.any(dim=dim, keepdim=True)
    if not keepdim:
        lse, empty = lse.squeeze(dim), empty.squeeze(dim)
    return lse.to(x.dtype), weights.to(x.dtype), empty


def _check(x: Tensor, valid: Tensor, dim: int, keepdim: bool) -> None:
    """Reject kinds, shapes and dims before any work."""
    if not isinstance(x, Tensor) or not x.is_floating_point() or x.dim() == 0:
        raise ValueError(f"x must be a floating tensor of at least 1 dim, got {described(x)}")
    if not isinstance(valid, Tensor) or valid.dtype != torch.bool:
        raise ValueError(f"valid must be a bool tensor, got {described(valid)}")
    if valid.shape != x.shape or valid.device != x.device:
        raise ValueError(f"valid must match x's shape and device, got {tuple(valid.shape)}")
    if isinstance(dim, bool) or not isinstance(dim, int) or not -x.dim() <= dim < x.dim():
        raise ValueError(f"dim must be an int in [{-x.dim()}, {x.dim()}), got {dim!r}")
    if not isinstance(keepdim, bool):
        raise ValueError(f"keepdim must be a bool, got {described(keepdim)}")


__all__ = ["masked_logsumexp"]
