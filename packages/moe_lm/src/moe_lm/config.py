"""MoELMConfig: an M02 config plus the mixture's sizes and the layers that get it."""

from __future__ import annotations

from dataclasses import dataclass

from modern_lm import ArgumentTypeError, ModernLMConfig, check_size


@dataclass(frozen=True)
class MoELMConfig(ModernLMConfig):
    """``ModernLMConfig``'s fields, then ``num_experts`` experts of ``intermediate_size``,
    ``experts_per_token`` chosen per token, in the layers ``moe_layers`` (None: every
    layer, Mixtral's layout); the other layers keep M02's dense SwiGLU."""

    num_experts: int = 4
    experts_per_token: int = 2
    moe_layers: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_size("num_experts", self.num_experts)
        check_size("experts_per_token", self.experts_per_token)
        if self.experts_per_token > self.num_experts:
            raise ValueError(
                f"experts_per_token ({self.experts_per_token}) must not exceed "
                f"num_experts ({self.num_experts})"
            )
        if self.moe_layers is not None:
            self._check_moe_layers(self.moe_layers)

    def _check_moe_layers(self, layers: object) -> None:
        if not isinstance(layers, tuple) or any(
            isinstance(i, bool) or not isinstance(i, int) for i in layers
        ):
            raise ArgumentTypeError(f"moe_layers must be a tuple of ints or None, got {layers!r}")
        if any(not 0 <= i < self.num_hidden_layers for i in layers):
            raise ValueError(f"moe_layers must lie in [0, {self.num_hidden_layers}), got {layers}")
        if len(set(layers)) != len(layers):
            raise ValueError(f"moe_layers repeats a layer: {layers}")

    def is_moe_layer(self, index: int) -> bool:
        return self.moe_layers is None or index in self.moe_layers


__all__ = ["MoELMConfig"]
