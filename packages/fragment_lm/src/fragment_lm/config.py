"""FragmentConfig: M02's config plus the mixture's sizes; every layer is a MoE layer."""

from __future__ import annotations

from dataclasses import dataclass

from modern_lm import ModernLMConfig, check_size


@dataclass(frozen=True)
class FragmentConfig(ModernLMConfig):
    """``ModernLMConfig``'s fields and checks, ``num_experts`` SwiGLU experts of
    ``intermediate_size`` with ``experts_per_token`` chosen per token in every layer, and
    a tied head by default (the fragment's logits are the embedding's)."""

    num_experts: int = 4
    experts_per_token: int = 2
    tie_word_embeddings: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        check_size("num_experts", self.num_experts)
        check_size("experts_per_token", self.experts_per_token)
        if self.experts_per_token > self.num_experts:
            raise ValueError(
                f"experts_per_token ({self.experts_per_token}) must not exceed "
                f"num_experts ({self.num_experts})"
            )

    @property
    def context_length(self) -> int:
        """Positions run in ``[0, max_position_embeddings)`` (the name a serving engine reads)."""
        return self.max_position_embeddings


__all__ = ["FragmentConfig"]
