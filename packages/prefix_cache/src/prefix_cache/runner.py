"""Prefill one prompt, reusing the longest cached prefix and computing only the rest.

For a prompt of T tokens and block size B the runner reuses at most

    B * floor((T - 1) / B)

tokens, so at least one token always goes through the model and produces the
next-token logits, even when the whole (block-aligned) prompt is cached. The
suffix runs at its absolute positions against the reused K/V; the complete K/V
the model returns is then published back, so the next request can reuse it.

A prefill that fails changes nothing: the prompt is checked first, the cache is
searched without counting, and the lookup is counted (hit or miss, recency,
reused tokens) only after the model accepted the prompt and returned its cache.
The model is the one that knows its vocabulary and context length.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from cache_aware_lm import CacheAwareModel

from .cache import PastKeyValues, PrefixCache, check_past
from .keys import INT64_MAX, PrefixCacheNamespace, check_count, check_namespace


@dataclass(frozen=True)
class PrefixPrefillOutput:
    """A prefill's result: suffix logits and the whole prompt's cache state."""

    logits: Tensor  # [1, T - reused_tokens, V]: positions logit_start .. T-1
    logit_start: int  # prompt index of logits[:, 0] (== reused_tokens)
    reused_tokens: int
    past_key_values: PastKeyValues  # whole prompt, every tensor [1, H_kv, T, D]
    cache_lengths: Tensor  # [1] long, == T
    cache_start_positions: Tensor  # [1] long, == positions[0, 0]

    def __post_init__(self) -> None:
        for name in ("logits", "cache_lengths", "cache_start_positions"):
            value = getattr(self, name)
            if not isinstance(value, Tensor):
                raise TypeError(f"{name} must be a tensor, got {type(value).__name__}")
        check_count(self.logit_start, "logit_start", minimum=0)
        check_count(self.reused_tokens, "reused_tokens", minimum=0)
        if self.logit_start != self.reused_tokens:
            raise ValueError(
                f"logit_start ({self.logit_start}) must equal reused_tokens ({self.reused_tokens})"
            )
        check_past(self.past_key_values, self.reused_tokens)


def _check_not_meta(model: object) -> None:
    """A model on ``meta`` is the problem (not a device mismatch with the prompt)."""
    parameters = getattr(model, "parameters", None)
    if callable(parameters):
        first = next(iter(parameters()), None)
        if isinstance(first, Tensor) and first.device.type == "meta":
            raise ValueError("model is on device meta: it has no weights to run")


def reuse_cap(prompt_length: int, block_size: int) -> int:
    """The most tokens a prefill may reuse: B * floor((T - 1) / B)."""
    check_count(prompt_length, "prompt_length", minimum=1)
    check_count(block_size, "block_size", minimum=1)
    return block_size * ((prompt_length - 1) // block_size)


# What the runner uses of its cache: search without counting, copy, count, publish.
_CACHE_INTERFACE = ("block_size", "_longest", "_match", "_record", "store")


class PrefixCachedRunner:
    """Batch-1 prefill through a cache-aware model, sharing prefixes via a PrefixCache."""

    def __init__(self, model: CacheAwareModel, cache: PrefixCache, namespace: PrefixCacheNamespace):
        if not callable(model):
            raise TypeError(f"model must be callable, got {type(model).__name__}")
        _check_not_meta(model)
        # Duck-typed: a PrefixCache built from this package's code, also when the class
        # object differs (a reloaded or mutated module).
        if not all(hasattr(cache, name) for name in _CACHE_INTERFACE):
            raise TypeError(f"cache must be a PrefixCache, got {type(cache).__name__}")
        self.model = model
        self.cache = cache
        self.namespace = check_namespace(namespace)

    def max_reused_tokens(self, prompt_length: int) -> int:
        """The reuse cap for a prompt of this length (see `reuse_cap`)."""
        return reuse_cap(prompt_length, self.cache.block_size)

    @torch.no_grad()
    def prefill(self, input_ids: Tensor, positions: Tensor) -> PrefixPrefillOutput:
        """``input_ids`` and ``positions`` are ``[1, T]`` long; positions are absolute."""
        start = _check_prompt(input_ids, positions)
        T = input_ids.shape[1]
        tokens = tuple(int(token) for token in input_ids[0].tolist())

        # Search without counting: a prompt the model rejects must leave no trace.
        found = self.cache._longest(
            self.namespace, tokens, start, max_length=self.max_reused_tokens(T)
        )
        match = self.cache._match(found)
        if match is None:
            reused = 0
            output = self.model(input_ids, positions, use_cache=True)
        else:
            reused = match.prefix_length
            output = self.model(
                input_ids[:, reused:],
                positions[:, reused:],
                match.past_key_values,
                torch.tensor([reused], dtype=torch.long, device=input_ids.device),
                torch.tensor([start], dtype=torch.long, device=input_ids.device),
                use_cache=True,
            )

        past, lengths, starts = (
            output.past_key_values,
            output.cache_lengths,
            output.cache_start_positions,
        )
        if past is None or lengths is None or starts is None:
            raise ValueError("the model returned no cache although use_cache=True was passed")
        check_past(past, T)  # before anything is counted, so `store` below cannot fail
        self.cache._record(found)
        self.cache.store(self.namespace, tokens, past, start)
        return PrefixPrefillOutput(
            logits=output.logits,
            logit_start=reused,
            reused_tokens=reused,
            past_key_values=past,
            cache_lengths=lengths,
            cache_start_positions=starts,
        )


def _check_prompt(input_ids: object, positions: object) -> int:
    """One ``[1, T]`` long prompt at consecutive non-negative positions; returns the start.

    Every column is checked (not only the ends), in Python ints so nothing wraps
    around int64. Two host syncs, once per prefill.
    """
    for name, tensor in (("input_ids", input_ids), ("positions", positions)):
        if not isinstance(tensor, Tensor):
            raise TypeError(f"{name} must be a tensor, got {type(tensor).__name__}")
        if tensor.dim() != 2 or tensor.shape[0] != 1:
            raise ValueError(f"{name} must be a [1, T] tensor (the runner prefills one prompt)")
        if tensor.dtype != torch.long:
            raise ValueError(f"{name} must be torch.long, got {tensor.dtype}")
        if tensor.device.type == "meta":
            raise ValueError(f"{name} is a meta tensor: it holds no values")
    assert isinstance(input_ids, Tensor) and isinstance(positions, Tensor)
    T = input_ids.shape[1]
    if T == 0:
        raise ValueError("input_ids must hold at least one token")
    if positions.shape != input_ids.shape:
        raise ValueError(
            f"positions {tuple(positions.shape)} must match input_ids {tuple(input_ids.shape)}"
        )
    if positions.device != input_ids.device:
        raise ValueError(f"positions are on {positions.device}, input_ids on {input_ids.device}")
    start, lowest_id = torch.stack((positions[0, 0], input_ids.min())).tolist()
    if lowest_id < 0:
        raise ValueError(f"input_ids must be non-negative token ids, got {lowest_id}")
    if not 0 <= start <= INT64_MAX - (T - 1):
        raise ValueError(f"positions must start in [0, 2**63 - T], got {start}")
    expected = torch.arange(start, start + T, device=positions.device)
    if not torch.equal(positions[0], expected):
        raise ValueError(f"positions must be consecutive from {start}, got {positions[0].tolist()}")
    return int(start)
