"""The speculative-sampling rejection rule, as pure functions of p (target) and q (draft).

A draft token x ~ q is accepted with probability min(1, p(x) / q(x)); otherwise the
emitted token is drawn from the residual norm(max(0, p - q)). The emitted token is then
distributed exactly as p:

    P(x) = q(x) min(1, p(x)/q(x)) + (1 - sum_y min(q(y), p(y))) r(x)
         = min(p(x), q(x)) + max(0, p(x) - q(x)) = p(x).

The public functions check their arguments (validation.py); the decode loop calls the
unchecked cores, whose p and q are softmax rows it made itself.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .validation import check_distributions, check_generator, check_token


def acceptance_probability(p: Tensor, q: Tensor, token: int) -> float:
    """min(1, p[token] / q[token]) for [V] distributions; 1 where q never proposes."""
    p, q = check_distributions(p, q)
    return _acceptance_probability(p, q, check_token(token, p.shape[0]))


def residual_distribution(p: Tensor, q: Tensor) -> Tensor:
    """norm(max(0, p - q)) [V]; p itself when p == q (then nothing is ever rejected)."""
    return _residual_distribution(*check_distributions(p, q))


def rejection_step(
    p: Tensor, q: Tensor, token: int, generator: torch.Generator | None = None
) -> tuple[bool, int]:
    """Accept ``token`` (drawn from q) or replace it: (accepted, emitted token)."""
    p, q = check_distributions(p, q)
    token = check_token(token, p.shape[0])
    check_generator(generator, p.device)
    return _rejection_step(p, q, token, generator)


def _acceptance_probability(p: Tensor, q: Tensor, token: int) -> float:
    q_token = float(q[token])
    if q_token <= 0.0:
        return 1.0
    return min(1.0, float(p[token]) / q_token)


def _residual_distribution(p: Tensor, q: Tensor) -> Tensor:
    residual = torch.clamp(p - q, min=0.0)
    total = residual.sum()
    if float(total) <= 0.0:
        return p.clone()
    return residual / total


def _rejection_step(
    p: Tensor, q: Tensor, token: int, generator: torch.Generator | None
) -> tuple[bool, int]:
    coin = torch.rand((), generator=generator, device=p.device)
    if float(coin) < _acceptance_probability(p, q, token):
        return True, token
    replacement = torch.multinomial(_residual_distribution(p, q), 1, generator=generator)
    return False, int(replacement)
