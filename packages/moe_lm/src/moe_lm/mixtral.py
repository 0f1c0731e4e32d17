"""Hugging Face Mixtral interop (transformers is never imported here).

Where the conventions differ:

- **Expert storage.** transformers (5.x) keeps a block's experts as two fused 3-D
  parameters, ``experts.gate_up_proj [E, 2F, C]`` (the gate rows, then the up rows) and
  ``experts.down_proj [E, C, F]``; this package keeps a ``ModuleList`` of SwiGLU experts
  (``experts.e.gate_proj``, ``up_proj``, ``down_proj``). ``from_mixtral_state`` and
  ``to_mixtral_state`` convert, exactly. The router is ``mlp.gate.weight [E, C]`` in both.
- **Router dtype.** Mixtral computes router logits in the activations' dtype and only the
  softmax in float32; this package computes the logits in float32 too. In float32 the two
  are the same computation; in bfloat16 the logits differ by bfloat16 rounding.
- **Ties.** Mixtral takes a plain ``torch.topk``, whose order among equal probabilities is
  unspecified (on the CPU not the lowest index: the higher of two tied experts, index 2 of
  four); this package picks the lowest. Outside exact ties the choices agree.
- **Layout.** Every Mixtral layer is a MoE layer: ``MoELMConfig(moe_layers=None)``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import torch
from torch import Tensor

from modern_lm import llama_config_kwargs

from .config import MoELMConfig

# A block's experts, alone (`experts.`) or inside a model (`model.layers.0.mlp.experts.`).
_FUSED = re.compile(r"^(?P<block>(?:.*\.)?experts)\.(?P<name>gate_up_proj|down_proj)$")
_SPLIT = re.compile(
    r"^(?P<block>(?:.*\.)?experts)\.(?P<e>\d+)\.(?P<name>gate_proj|up_proj|down_proj)\.weight$"
)


def mixtral_config_kwargs(config: MoELMConfig) -> dict[str, object]:
    """Keyword arguments for ``transformers.MixtralConfig`` describing the same model
    (every layer a MoE layer; no sliding window)."""
    if not isinstance(config, MoELMConfig):
        raise TypeError(f"config must be a MoELMConfig, got {type(config).__name__}")
    if config.moe_layers is not None and len(config.moe_layers) != config.num_hidden_layers:
        raise ValueError("Mixtral has a MoE in every layer: moe_layers must be None or all")
    kwargs = llama_config_kwargs(config)
    for llama_only in ("attention_bias", "mlp_bias"):
        kwargs.pop(llama_only)
    kwargs.update(
        num_local_experts=config.num_experts,
        num_experts_per_tok=config.experts_per_token,
        sliding_window=None,
        router_jitter_noise=0.0,
    )
    return kwargs


def from_mixtral_state(state: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """A Mixtral state dict under this package's names: each fused expert tensor split
    into per-expert ``gate_proj``/``up_proj``/``down_proj`` weights; other keys as they are."""
    out: dict[str, Tensor] = {}
    for key, tensor in state.items():
        match = _FUSED.match(key)
        if match is None:
            out[key] = tensor
            continue
        block = match["block"]
        for e, weight in enumerate(tensor.unbind(0)):
            if match["name"] == "down_proj":
                out[f"{block}.{e}.down_proj.weight"] = weight
            else:
                gate, up = weight.chunk(2, dim=0)
                out[f"{block}.{e}.gate_proj.weight"] = gate
                out[f"{block}.{e}.up_proj.weight"] = up
    return out


def to_mixtral_state(state: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """This package's state dict under Mixtral's names: per-expert weights fused into
    ``gate_up_proj [E, 2F, C]`` and ``down_proj [E, C, F]``; other keys as they are."""
    out: dict[str, Tensor] = {}
    experts: dict[str, dict[int, dict[str, Tensor]]] = {}
    for key, tensor in state.items():
        match = _SPLIT.match(key)
        if match is None:
            out[key] = tensor
            continue
        experts.setdefault(match["block"], {}).setdefault(int(match["e"]), {})[match["name"]] = (
            tensor
        )
    for block, by_index in experts.items():
        ordered = [by_index[e] for e in sorted(by_index)]
        out[f"{block}.gate_up_proj"] = torch.stack(
            [torch.cat((w["gate_proj"], w["up_proj"]), dim=0) for w in ordered]
        )
        out[f"{block}.down_proj"] = torch.stack([w["down_proj"] for w in ordered])
    return out


__all__ = ["from_mixtral_state", "mixtral_config_kwargs", "to_mixtral_state"]
