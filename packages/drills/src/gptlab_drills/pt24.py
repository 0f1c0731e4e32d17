"""PT24 speculative rejection verification (transfer case; owner P11).

A draft model proposed K tokens per row; draft_logprobs[b, k] and target_logprobs[b, k]
are the log-probabilities the draft and the target model give the k-th drafted token.
Token k is accepted with probability min(1, p_t / p_d), decided by the caller's uniform:

    accepted[b, k] = uniforms[b, k] < p_t / p_d   <=>   log(uniforms[b, k]) < lt - ld

and a row keeps only the accepted prefix: its result is the index of its first rejected
token, or K when none is rejected. The test stays in log space (exp of a log-probability
near -1000 is 0 in any float dtype, and 0 / 0 is NaN), computed in float64. The uniforms
are explicit, one per (row, position), so a row's answer never depends on its batch row.

Shapes: draft_logprobs, target_logprobs, uniforms [B, K] floating -> [B] int64, each in [0, K].
"""

from __future__ import annotations

from torch import Tensor

from ._describe import described


def accepted_prefix_lengths(
    draft_logprobs: Tensor, target_logprobs: Tensor, uniforms: Tensor
) -> Tensor:
    """How many leading drafted tokens of each row the target accepts -> [B] int64."""
    _check(draft_logprobs, target_logprobs, uniforms)
    log_ratio = target_logprobs.double() - draft_logprobs.double()  # log(p_t / p_d)
    accepted = uniforms.double().log() < log_ratio  # log(0) = -inf: accepted unless p_t = 0
    # the prefix ends at the first rejection: a running product zeroes everything after it
    return accepted.long().cumprod(dim=1).sum(dim=1)


def _check(draft: Tensor, target: Tensor, uniforms: Tensor) -> None:
    """Reject kinds, shapes, devices, impossible probabilities and bad uniforms before work."""
    named = {"draft_logprobs": draft, "target_logprobs": target, "uniforms": uniforms}
    for name, tensor in named.items():
        if not isinstance(tensor, Tensor) or not tensor.is_floating_point():
            raise ValueError(f"{name} must be a floating tensor, got {described(tensor)}")
        if tensor.dim() != 2 or tensor.shape != draft.shape:
            raise ValueError(f"{name} must be [B, K] like draft_logprobs, got {described(tensor)}")
        if tensor.device != draft.device:
            raise ValueError(f"{name} is on {tensor.device}, draft_logprobs on {draft.device}")
    # a drafted token had a positive draft probability of at most 1 (-inf or NaN: impossible)
    if not bool(((draft > float("-inf")) & (draft <= 0)).all()):
        raise ValueError("draft_logprobs must lie in (-inf, 0]: a drafted token had p_d > 0")
    if not bool((target <= 0).all()):  # -inf allowed (p_t = 0 rejects), NaN and > 0 not
        raise ValueError("target_logprobs must lie in [-inf, 0]")
    if not bool(((uniforms >= 0) & (uniforms < 1)).all()):
        raise ValueError("uniforms must lie in [0, 1)")


__all__ = ["accepted_prefix_lengths"]
