"""GPTConfig: the frozen, self-validating shape of a TinyGPT."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from .errors import ArgumentTypeError, type_name

_SIZE_FIELDS = ("vocab_size", "context_length", "d_model", "n_layers", "n_heads", "d_ff")
# Sizes no machine holds are refused here, before a model allocates anything: a typo such
# as n_layers=2**40 must fail at once, naming the field, not build blocks until memory ends.
MAX_LAYERS = 2**16
MAX_PARAMETERS = 2**40  # about 1.1e12 weights (4.4 TB in fp32)
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
                raise ArgumentTypeError(f"{name} must be an int, got {type_name(value)} {value!r}")
            if value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")
        if self.d_model % self.n_heads != 0:
            raise ValueError(
                f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})"
            )
        check_fits(self)
        for name in ("dropout", "layer_norm_eps"):
            value = getattr(self, name)
            if not _is_real(value):
                raise ArgumentTypeError(f"{name} must be a float, got {type_name(value)} {value!r}")
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"{name} must be finite, got {value!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.layer_norm_eps <= 0:
            raise ValueError(f"layer_norm_eps must be positive, got {self.layer_norm_eps}")
        if not isinstance(self.gelu_approximate, str):
            raise ArgumentTypeError(
                f"gelu_approximate must be one of {GELU_APPROXIMATIONS}, "
                f"got {type_name(self.gelu_approximate)} {self.gelu_approximate!r}"
            )
        if self.gelu_approximate not in GELU_APPROXIMATIONS:
            raise ValueError(
                f"gelu_approximate must be one of {GELU_APPROXIMATIONS}, "
                f"got {self.gelu_approximate!r}"
            )

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


def check_fits(config: GPTConfig) -> None:
    """Refuse a depth or a parameter count no machine holds, naming the largest term."""
    if config.n_layers > MAX_LAYERS:
        raise ValueError(f"n_layers must be <= {MAX_LAYERS}, got {config.n_layers}")
    V, ctx, C, L, F = (
        config.vocab_size,
        config.context_length,
        config.d_model,
        config.n_layers,
        config.d_ff,
    )
    terms = {
        "vocab_size * d_model": V * C,
        "context_length * d_model": ctx * C,
        "n_layers * (4*d_model**2 + 2*d_model*d_ff + ...)": L * (4 * C * C + 2 * C * F + 9 * C + F),
    }
    total = sum(terms.values()) + 2 * C
    if total > MAX_PARAMETERS:
        largest = max(terms, key=terms.__getitem__)
        raise ValueError(
            f"the config describes {_magnitude(total)} parameters, more than 2**40; "
            f"the largest term is {largest} = {_magnitude(terms[largest])}"
        )


def _magnitude(count: int) -> str:
    """An int for a message: exact when short, as a power of two when astronomically long."""
    return f"{count:,}" if count < 10**15 else f"about 2**{count.bit_length() - 1}"


def _is_real(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


__all__ = ["MAX_LAYERS", "MAX_PARAMETERS", "GPTConfig"]
assert [f.name for f in fields(GPTConfig)][:6] == list(_SIZE_FIELDS)
