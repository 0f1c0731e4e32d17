"""IntermediateTensors: what a non-final pipeline stage hands the next one."""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor


@dataclass
class IntermediateTensors:
    """Named tensors between stages; this package sends one, ``hidden_states`` [N, C]
    (the residual stream after the stage's last layer)."""

    tensors: dict[str, Tensor]

    def __getitem__(self, key: str) -> Tensor:
        return self.tensors[key]


__all__ = ["IntermediateTensors"]
