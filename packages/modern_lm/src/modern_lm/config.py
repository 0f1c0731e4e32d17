"""ModernLMConfig: the frozen, self-validating shape of a Llama-style decoder.

Field names are Hugging Face ``LlamaConfig``'s, so a config maps onto Llama's by name.
"""

from __future__ import annotations

from dataclasses import dataclass

from .checks import ArgumentTypeError, check_bool, check_float, check_probability, check_size

_SIZES = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "max_position_embeddings",
)


@dataclass(frozen=True)
class ModernLMConfig:
    """Sizes of an RMSNorm / GQA / RoPE / SwiGLU decoder, checked at construction.

    ``hidden_size == num_attention_heads * head_dim``; ``num_key_value_heads`` divides
    ``num_attention_heads``; ``head_dim`` is even (RoPE rotates channel pairs); dropout
    in [0, 1). ``dataclasses.replace`` re-checks (the checks live in ``__post_init__``).
    """

    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    max_position_embeddings: int
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-6
    dropout: float = 0.0
    tie_word_embeddings: bool = False

    def __post_init__(self) -> None:
        for name in _SIZES:
            check_size(name, getattr(self, name))
        if self.hidden_size != self.num_attention_heads * self.head_dim:
            raise ValueError(
                f"hidden_size ({self.hidden_size}) must equal num_attention_heads "
                f"({self.num_attention_heads}) x head_dim ({self.head_dim})"
            )
        if self.num_attention_heads % self.num_key_value_heads != 0:
            raise ValueError(
                f"num_attention_heads ({self.num_attention_heads}) must be divisible by "
                f"num_key_value_heads ({self.num_key_value_heads})"
            )
        if self.head_dim % 2 != 0:
            raise ValueError(f"head_dim must be even (RoPE rotates pairs), got {self.head_dim}")
        check_float("rope_theta", self.rope_theta)
        check_float("rms_norm_eps", self.rms_norm_eps)
        check_probability("dropout", self.dropout)
        check_bool("tie_word_embeddings", self.tie_word_embeddings)

    @staticmethod
    def checked(config: object) -> ModernLMConfig:
        """``config`` itself when it is a ModernLMConfig, else TypeError naming ``config``."""
        if not isinstance(config, ModernLMConfig):
            raise ArgumentTypeError(f"config must be a ModernLMConfig, got {type(config).__name__}")
        return config

    @property
    def kv_group_size(self) -> int:
        """Query heads per key/value head."""
        return self.num_attention_heads // self.num_key_value_heads


__all__ = ["ModernLMConfig"]
