"""GPTConfig: the frozen, self-validating shape of a TinyGPT."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

_SIZE_FIELDS = ("vocab_size", "context_length", "d_model", "n_layers", "n_heads", "d_ff")
# The MLP's GELU: "none" is the exact erf GELU (the contract); "tanh" is GPT-2's approximation.
GELU_APPROXIMATIONS = ("none", "tanh")


@dataclass(frozen=True)
class GPTConfig:
    """Sizes of a GPT-2-shaped decoder. Invalid values raise ValueError on construction.

    Validation lives in ``__post_init__`` so ``dataclasses.replace`` re-checks too.
    ``gelu_approximate`` is this project's extension beyond the contract: the default
    ``"none"`` keeps the exact GELU; ``"tanh"`` runs real GPT-2 checkpoints exactly.
    """

    vocab_size: int
    context_length: int
    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    dropout: float = 0.0
    layer_norm_eps: float = 1e-5
    gelu_approximate: str = "none"

    def __post_init__(self) -> None:
        for name in _SIZE_FIELDS:
            value = getattr(self, name)
            # bool is an int subclass; True must not pass as a size of 1.
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name} must be an int, got {type(value).__name__} {value!r}")
            if value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")
        if self.d_model % self.n_heads != 0:
            raise ValueError(
                f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})"
            )
        if not _is_real(self.dropout) or not math.isfinite(self.dropout):
            raise ValueError(f"dropout must be a finite float, got {self.dropout!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if not _is_real(self.layer_norm_eps) or not math.isfinite(self.layer_norm_eps):
            raise ValueError(f"layer_norm_eps must be a finite float, got {self.layer_norm_eps!r}")
        if self.layer_norm_eps <= 0:
            raise ValueError(f"layer_norm_eps must be positive, got {self.layer_norm_eps}")
        if not isinstance(self.gelu_approximate, str) or (
            self.gelu_approximate not in GELU_APPROXIMATIONS
        ):
            raise ValueError(
                f"gelu_approximate must be one of {GELU_APPROXIMATIONS}, "
                f"got {self.gelu_approximate!r}"
            )

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


def _is_real(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


__all__ = ["GPTConfig"]
assert [f.name for f in fields(GPTConfig)][:6] == list(_SIZE_FIELDS)
