"""ModernConfig: the frozen, self-validating shape of a ModernCacheAwareLM."""

from __future__ import annotations

import math
from dataclasses import dataclass

_SIZE_FIELDS = (
    "vocab_size",
    "context_length",
    "d_model",
    "n_layers",
    "n_heads",
    "n_kv_heads",
    "d_ff",
)


@dataclass(frozen=True)
class ModernConfig:
    """Sizes of a grouped-query, rotary, RMSNorm, SwiGLU decoder.

    ``n_kv_heads`` key/value heads serve ``n_heads`` query heads (it must divide
    ``n_heads``); ``d_ff`` is the SwiGLU hidden width. Invalid values raise
    ValueError in ``__post_init__``, so ``dataclasses.replace`` re-checks too.
    """

    vocab_size: int
    context_length: int
    d_model: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    d_ff: int
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0

    def __post_init__(self) -> None:
        for name in _SIZE_FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name} must be an int, got {type(value).__name__} {value!r}")
            if value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")
        if self.d_model % self.n_heads != 0:
            raise ValueError(
                f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})"
            )
        if self.n_heads % self.n_kv_heads != 0:
            raise ValueError(
                f"n_heads ({self.n_heads}) must be divisible by n_kv_heads ({self.n_kv_heads})"
            )
        if self.head_dim % 2 != 0:
            raise ValueError(f"rotary embeddings need an even head_dim, got {self.head_dim}")
        for name in ("rms_norm_eps", "rope_theta"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{name} must be a float, got {value!r}")
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be finite and positive, got {value}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def group_size(self) -> int:
        """Query heads per key/value head."""
        return self.n_heads // self.n_kv_heads


__all__ = ["ModernConfig"]
