"""ModernConfig: the frozen, self-validating shape of a ModernCacheAwareLM."""

from __future__ import annotations

from dataclasses import dataclass

from modern_lm import check_float, check_size
from tinygpt import GPTConfig


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
        # The sizes shared with GPT-2 follow tinygpt's rules (int, not bool, positive,
        # d_model divisible by n_heads): one validation, raised with its messages.
        GPTConfig(
            self.vocab_size,
            self.context_length,
            self.d_model,
            self.n_layers,
            self.n_heads,
            self.d_ff,
        )
        check_size("n_kv_heads", self.n_kv_heads)
        if self.n_heads % self.n_kv_heads != 0:
            raise ValueError(
                f"n_heads ({self.n_heads}) must be divisible by n_kv_heads ({self.n_kv_heads})"
            )
        if self.head_dim % 2 != 0:
            raise ValueError(f"rotary embeddings need an even head_dim, got {self.head_dim}")
        check_float("rms_norm_eps", self.rms_norm_eps)
        check_float("rope_theta", self.rope_theta)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def group_size(self) -> int:
        """Query heads per key/value head."""
        return self.n_heads // self.n_kv_heads


__all__ = ["ModernConfig", "check_float", "check_size"]
