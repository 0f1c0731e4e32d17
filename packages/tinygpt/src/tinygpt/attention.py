"""Causal multi-head self-attention over a functional K/V cache.

Shape ledger: hidden [B, T, C] -> q, k, v [B, H, T, D] -> (with the past) k, v
[B, H, P+T, D] -> attention [B, H, T, D] -> merged [B, T, C].
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .config import GPTConfig
from .errors import ArgumentTypeError, type_name

LayerKV = tuple[Tensor, Tensor]
"""One block's (key, value), each [B, H, S, D]."""

PastKeyValues = tuple[LayerKV, ...]
"""One LayerKV per decoder block, all sharing S."""


class CausalSelfAttention(nn.Module):
    """Multi-head attention whose queries sit after ``past_length`` cached keys."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.n_heads = config.n_heads
        self.head_dim = config.head_dim
        # One fused projection laid out [q | k | v]; each third is split into heads contiguously.
        self.qkv_proj = nn.Linear(config.d_model, 3 * config.d_model)
        self.out_proj = nn.Linear(config.d_model, config.d_model)
        self.attention_dropout_p = config.dropout
        self.residual_dropout = nn.Dropout(config.dropout)

    def forward(
        self, hidden_states: Tensor, past_key_value: LayerKV | None = None
    ) -> tuple[Tensor, LayerKV]:
        self.check_inputs(hidden_states, past_key_value)
        T = hidden_states.size(1)
        q, k, v = self.split_heads(self.qkv_proj(hidden_states))  # each [B, H, T, D]
        if past_key_value is not None:
            past_key, past_value = past_key_value
            # torch.cat allocates: the caller's cache is read, never written or aliased.
            k = torch.cat((past_key, k), dim=2)  # [B, H, P+T, D]
            v = torch.cat((past_value, v), dim=2)
        else:
            # The returned cache owns its memory: not views into the fused qkv output.
            k, v = k.clone(), v.clone()
        mask = self.causal_mask(k.size(2) - T, T, hidden_states.device)  # [T, P+T]
        # SDPA knows nothing of module mode: dropout must be switched off by hand in eval.
        dropout_p = self.attention_dropout_p if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
        output = self.residual_dropout(self.out_proj(self.merge_heads(y)))
        return output, (k, v)

    def check_inputs(self, hidden_states: object, past_key_value: object) -> None:
        """hidden [B, T, C] and an optional past (key, value) [B, H, P, D]: shapes, dtype, device.

        Python-only comparisons (no device reads). A well-formed call (the per-layer hot
        path) passes one combined test; only a malformed one walks the detailed checks.
        """
        weight = self.qkv_proj.weight
        if self._well_formed(hidden_states, past_key_value, weight):
            return
        if not isinstance(hidden_states, Tensor):
            raise ArgumentTypeError(
                f"hidden_states must be a Tensor, got {type_name(hidden_states)}"
            )
        C = self.n_heads * self.head_dim
        shape = tuple(hidden_states.shape)
        if len(shape) != 3 or shape[0] < 1 or shape[1] < 1 or shape[2] != C:
            raise ValueError(f"hidden_states must be [B, T, {C}] with B, T >= 1, got {shape}")
        if hidden_states.dtype != weight.dtype or hidden_states.device != weight.device:
            raise ValueError(
                f"hidden_states is {hidden_states.dtype} on {hidden_states.device}, the "
                f"attention computes in {weight.dtype} on {weight.device}"
            )
        if past_key_value is None:
            return
        if not isinstance(past_key_value, tuple):
            raise ArgumentTypeError(
                f"past_key_value must be a (key, value) tuple, got {type_name(past_key_value)}"
            )
        if len(past_key_value) != 2:
            raise ValueError(
                f"past_key_value must be a (key, value) pair, got {len(past_key_value)}"
            )
        for name, tensor in zip(("key", "value"), past_key_value, strict=True):
            if not isinstance(tensor, Tensor):
                raise ArgumentTypeError(
                    f"past_key_value {name} must be a Tensor, got {type_name(tensor)}"
                )
            expected = (shape[0], self.n_heads, self.head_dim)
            if tensor.dim() != 4 or (tensor.shape[0], tensor.shape[1], tensor.shape[3]) != expected:
                raise ValueError(
                    f"past_key_value {name} must be [{shape[0]}, {self.n_heads}, P, "
                    f"{self.head_dim}], got {tuple(tensor.shape)}"
                )
            if tensor.dtype != weight.dtype or tensor.device != weight.device:
                raise ValueError(
                    f"past_key_value {name} is {tensor.dtype} on {tensor.device}, the "
                    f"attention computes in {weight.dtype} on {weight.device}"
                )
        if past_key_value[0].shape[2] != past_key_value[1].shape[2]:
            raise ValueError("past_key_value key and value must hold the same number of positions")

    def _well_formed(self, hidden: object, past: object, weight: Tensor) -> bool:
        if not isinstance(hidden, Tensor) or hidden.dtype is not weight.dtype:
            return False
        B, T, C = hidden.shape if hidden.dim() == 3 else (0, 0, 0)
        if B < 1 or T < 1 or self.n_heads * self.head_dim != C or hidden.device != weight.device:
            return False
        if past is None:
            return True
        if not isinstance(past, tuple) or len(past) != 2:
            return False
        key, value = past
        return (
            isinstance(key, Tensor)
            and isinstance(value, Tensor)
            and key.dim() == 4
            and key.shape == value.shape
            and (key.shape[0], key.shape[1], key.shape[3]) == (B, self.n_heads, self.head_dim)
            and key.dtype is weight.dtype
            and value.dtype is weight.dtype
            and key.device == hidden.device
            and value.device == hidden.device
        )

    def split_heads(self, qkv: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """[B, T, 3C] -> three [B, H, T, D] (transpose before heads meet time)."""
        B, T, _ = qkv.shape
        qkv = qkv.view(B, T, 3, self.n_heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        return q, k, v

    def merge_heads(self, y: Tensor) -> Tensor:
        """[B, H, T, D] -> [B, T, C]."""
        B, H, T, D = y.shape
        return y.transpose(1, 2).reshape(B, T, H * D)

    @staticmethod
    def causal_mask(past_length: int, query_length: int, device: torch.device) -> Tensor:
        """Boolean [T, P+T], True = may attend: M[i, j] = j <= P + i (absolute positions).

        Anchoring at the lower right (not the upper left) is what makes a multi-token
        chunk after a cache exact.
        """
        query_positions = torch.arange(query_length, device=device) + past_length
        key_positions = torch.arange(past_length + query_length, device=device)
        return key_positions[None, :] <= query_positions[:, None]


__all__ = ["CausalSelfAttention", "LayerKV", "PastKeyValues"]
