"""Faithful M02 that takes the other allowed choice at each policy point of the clauses.

The reference's layers with: config errors whose messages quote the offending value and
never the field's name, a plain TypeError (not a ValueError) for a size of the wrong kind
(M02.3-M02.9); norms computed in float64 inside and cast back (M02.17, M02.19: "float32 or
wider"); and torch's own `load_state_dict`, which copies what fits before it raises and
lets `lm_head.weight` win a tied checkpoint (M02.15's RuntimeError; M02.36 and M02.37 are
not graded). Every contract test must pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from torch import nn

from gptlab_testkit.mutants import export_with, mutated_module
from modern_lm.config import ModernLMConfig as ReferenceConfig

VARIABLE = "MODERN_LM_MODULE"


@dataclass(frozen=True)
class ModernLMConfig(ReferenceConfig):
    def __post_init__(self) -> None:
        for field in fields(self)[:8]:  # the eight sizes
            value = getattr(self, field.name)
            if type(value) is not int:
                raise TypeError(f"{value!r} is not an int")
            if value < 1:
                raise ValueError(f"a size of {value} is not positive")
        heads, kv_heads, head_dim = (
            self.num_attention_heads,
            self.num_key_value_heads,
            self.head_dim,
        )
        if self.hidden_size != heads * head_dim:
            raise ValueError(f"{self.hidden_size} is not {heads} x {head_dim}")
        if heads % kv_heads:
            raise ValueError(f"{heads} query heads do not split into groups of {kv_heads}")
        if head_dim % 2:
            raise ValueError(f"{head_dim} channels cannot be rotated in pairs")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"{self.dropout} is outside [0, 1)")
        for value in (self.rope_theta, self.rms_norm_eps):
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{value} is not a finite positive number")


norm = mutated_module(
    "modern_lm.norm",
    [("x32 = x.to(torch.promote_types(x.dtype, torch.float32))", "x32 = x.double()")],
)
attention = mutated_module("modern_lm.attention", rebind={"ModernLMConfig": ModernLMConfig})
model = mutated_module(
    "modern_lm.model",
    rebind={
        "RMSNorm": norm.RMSNorm,
        "ModernLMConfig": ModernLMConfig,
        "GroupedQueryAttention": attention.GroupedQueryAttention,
    },
)


class ModernLM(model.ModernLM):
    load_state_dict = nn.Module.load_state_dict  # torch's: not atomic, lm_head.weight wins


globals().update(export_with("modern_lm", model, ModernLMConfig=ModernLMConfig, ModernLM=ModernLM))
