"""Held-out loss and draft acceptance: the numbers the model card documents."""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional

from cache_aware_lm.modern import ModernCacheAwareLM
from kv_cache import KVCache
from speculative import serve_speculative_generate

from .corpus import SEPARATOR

WINDOW = 128  # held-out windows are scored independently, each from position 0


def held_out_windows(tokens: Tensor) -> tuple[Tensor, Tensor]:
    """(inputs, targets) ``[N, WINDOW]``: consecutive windows, targets shifted by one."""
    count = (tokens.numel() - 1) // WINDOW
    inputs = tokens[: count * WINDOW].view(count, WINDOW)
    targets = tokens[1 : count * WINDOW + 1].view(count, WINDOW)
    return inputs, targets


@torch.inference_mode()
def held_out_loss(model: ModernCacheAwareLM, tokens: Tensor) -> float:
    """Mean next-byte cross-entropy (nats) over every held-out window position."""
    inputs, targets = held_out_windows(tokens)
    positions = torch.arange(WINDOW).expand_as(inputs)
    logits = model(inputs, positions).logits
    return float(functional.cross_entropy(logits.flatten(0, 1), targets.flatten()))


def storage(model: ModernCacheAwareLM, capacity: int) -> KVCache:
    geometry = model.geometry
    return KVCache(geometry.n_layers, 1, geometry.n_kv_heads, capacity, geometry.head_dim)


@torch.inference_mode()
def acceptance_rate(
    target: ModernCacheAwareLM,
    draft: ModernCacheAwareLM,
    tokens: Tensor,
    prompts: int = 8,
    prompt_length: int = 32,
    new_tokens: int = 96,
    width: int = 4,
) -> float:
    """Accepted / proposed draft tokens, greedy, over prompts cut from ``tokens``."""
    proposed = accepted = 0
    stride = (tokens.numel() - prompt_length) // prompts
    for index in range(prompts):
        ids = tokens[index * stride : index * stride + prompt_length][None]
        positions = torch.arange(prompt_length)[None]
        capacity = prompt_length + new_tokens
        out = serve_speculative_generate(
            target, draft, ids, positions, new_tokens, width,
            storage(target, capacity), storage(draft, capacity), SEPARATOR,
        )  # fmt: skip
        proposed += out.proposed_tokens
        accepted += out.accepted_draft_tokens
    return accepted / max(proposed, 1)


__all__ = ["WINDOW", "acceptance_rate", "held_out_loss", "held_out_windows", "storage"]
