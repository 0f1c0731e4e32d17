"""RuntimeLMConfig: an M02 config plus the simulated pipeline stage a model holds."""

from __future__ import annotations

from dataclasses import dataclass

from modern_lm import ArgumentTypeError, ModernLMConfig, check_size


@dataclass(frozen=True)
class RuntimeLMConfig(ModernLMConfig):
    """``ModernLMConfig``'s fields, then this model's stage of a simulated pipeline:
    stage ``pipeline_rank`` of ``pipeline_size`` holds the layers ``stage_layers``; the
    first stage also holds the embedding, the last the final norm and the head (and the
    embedding too when the head is tied to it)."""

    pipeline_rank: int = 0
    pipeline_size: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        check_size("pipeline_size", self.pipeline_size)
        rank = self.pipeline_rank
        if isinstance(rank, bool) or not isinstance(rank, int):
            raise ArgumentTypeError(f"pipeline_rank must be an int, got {rank!r}")
        if not 0 <= rank < self.pipeline_size:
            raise ValueError(f"pipeline_rank must lie in [0, {self.pipeline_size}), got {rank}")
        if self.pipeline_size > self.num_hidden_layers:  # every stage holds a layer
            raise ValueError(
                f"pipeline_size ({self.pipeline_size}) must not exceed num_hidden_layers "
                f"({self.num_hidden_layers})"
            )

    @property
    def first_stage(self) -> bool:
        return self.pipeline_rank == 0

    @property
    def last_stage(self) -> bool:
        return self.pipeline_rank == self.pipeline_size - 1

    @property
    def stage_layers(self) -> range:
        """Stage r of P holds layers [r*L // P, (r+1)*L // P): consecutive, every layer once."""
        L, P, r = self.num_hidden_layers, self.pipeline_size, self.pipeline_rank
        return range(r * L // P, (r + 1) * L // P)

    @property
    def holds_embedding(self) -> bool:
        """The first stage embeds; a tied last stage needs the table as its head."""
        return self.first_stage or (self.tie_word_embeddings and self.last_stage)


__all__ = ["RuntimeLMConfig"]
