"""P25 top-k mixture-of-experts routing with a per-expert capacity.

Each token's router probabilities (fp32 softmax over experts) pick its k experts; their
probabilities, renormalised over those k, weight the experts' outputs. An expert takes at
most `capacity` tokens, first come first served in token order: a later token's assignment
to a full expert is dropped (it adds nothing; the token keeps its other assignments, and
a token with none left gets zeros). Each expert runs once on its kept tokens packed in
token order; the weighted results are added back at their tokens' rows.

Shapes: x [N, C]; router_logits [N, E]; experts: E callables [n, C] -> [n, C];
1 <= k <= E; capacity >= 0. Returns (out [N, C] in x's dtype, load [E] int64 kept tokens).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import torch
from torch import Tensor

from ._describe import described

Expert = Callable[[Tensor], Tensor]


def top_k_moe(
    x: Tensor, router_logits: Tensor, experts: Sequence[Expert], k: int, capacity: int
) -> tuple[Tensor, Tensor]:
    """Route every token to its top-k experts within capacity; combine; restore order."""
    _check(x, router_logits, experts, k, capacity)
    N, C = x.shape
    probs = torch.softmax(router_logits.float(), dim=-1)  # over experts, in fp32
    top_probs, top_experts = probs.topk(k, dim=-1)  # [N, k]
    weights = top_probs / top_probs.sum(dim=-1, keepdim=True)
    out = torch.zeros(N, C, dtype=torch.float32, device=x.device)
    load = torch.zeros(len(experts), dtype=torch.int64, device=x.device)
    for e, expert in enumerate(experts):
        # nonzero is row-major: the tokens that chose e, in token order (a token picks e once).
        token, choice = (top_experts == e).nonzero(as_tuple=True)
        token, choice = token[:capacity], choice[:capacity]  # overflow: later tokens dropped
        load[e] = len(token)
        if len(token) == 0:
            continue
        packed = expert(x[token])  # [n_e, C], one call per expert
        if not isinstance(packed, Tensor) or packed.shape != (len(token), C):
            raise ValueError(f"experts[{e}] returned {described(packed)}, want ({len(token)}, {C})")
        out.index_add_(0, token, packed.float() * weights[token, choice, None])
    return out.to(x.dtype), load


def _check(
    x: Tensor, router_logits: Tensor, experts: Sequence[Expert], k: int, capacity: int
) -> None:
    """Reject every malformed argument before any expert runs (ValueError, or TypeError
    for the wrong kind of object), naming it."""
    for name, t in (("x", x), ("router_logits", router_logits)):
        if not isinstance(t, Tensor) or not t.is_floating_point():
            raise TypeError(f"{name} must be a float tensor, got {described(t)}")
        if t.dim() != 2 or t.is_meta:  # a meta tensor holds no values to route
            raise ValueError(
                f"{name} must be [rows, cols] with data, got {described(t)} {t.device}"
            )
    if router_logits.shape[0] != x.shape[0]:
        raise ValueError(f"router_logits has {router_logits.shape[0]} rows, x {x.shape[0]}")
    # NaN or +inf makes softmax NaN; a row of -inf has no expert to choose.
    bad = router_logits.isnan() | router_logits.isposinf()
    if bad.any() or router_logits.isneginf().all(dim=-1).any():
        raise ValueError("router_logits must be finite or -inf, with a finite logit per row")
    E = router_logits.shape[1]
    if isinstance(experts, Iterator) or not hasattr(experts, "__len__"):
        raise TypeError(f"experts must be a sequence of callables, got {described(experts)}")
    if len(experts) != E or not all(callable(expert) for expert in experts):
        raise ValueError(f"experts must be {E} callables (one per router column)")
    for name, value, low, high in (("k", k, 1, E), ("capacity", capacity, 0, None)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {described(value)}")
        if value < low or (high is not None and value > high):
            raise ValueError(f"{name} = {value} is outside {low}..{high if high else 'inf'}")


__all__ = ["top_k_moe"]
