"""load_weights: separate checkpoint tensors into packed parameters, all or nothing.

A checkpoint names Llama's tensors (``q_proj``, ``k_proj``, ``v_proj``, ``gate_proj``,
``up_proj`` apart); this model packs q/k/v into ``qkv_proj`` and gate/up into
``gate_up_proj`` (vLLM's ``stacked_params_mapping``). Every tensor is read and checked
before any parameter changes: a duplicate name, a name that is no weight of the model,
a shape that is not the checkpoint's, or a weight this stage needs that never came is a
ValueError naming it, and the model keeps its values. Weights of another pipeline stage
are skipped, as is ``lm_head.weight`` when the head is the embedding.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import torch
from torch import Tensor, nn

from .config import RuntimeLMConfig

# checkpoint shard name -> the packed parameter it is rows of (in `checkpoint_shapes`'
# order: q, k, v; gate, up)
STACKED = {
    "q_proj": "qkv_proj",
    "k_proj": "qkv_proj",
    "v_proj": "qkv_proj",
    "gate_proj": "gate_up_proj",
    "up_proj": "gate_up_proj",
}
Target = tuple[str, int, int]  # parameter name, first row, row count


def checkpoint_shapes(config: RuntimeLMConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor of the whole model's checkpoint (all stages), Llama's names."""
    V, C, F = config.vocab_size, config.hidden_size, config.intermediate_size
    q = config.num_attention_heads * config.head_dim
    kv = config.num_key_value_heads * config.head_dim
    shapes: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (V, C)}
    for i in range(config.num_hidden_layers):
        p = f"model.layers.{i}."
        shapes.update(
            {
                p + "input_layernorm.weight": (C,),
                p + "self_attn.q_proj.weight": (q, C),
                p + "self_attn.k_proj.weight": (kv, C),
                p + "self_attn.v_proj.weight": (kv, C),
                p + "self_attn.o_proj.weight": (C, q),
                p + "post_attention_layernorm.weight": (C,),
                p + "mlp.gate_proj.weight": (F, C),
                p + "mlp.up_proj.weight": (F, C),
                p + "mlp.down_proj.weight": (C, F),
            }
        )
    shapes.update({"model.norm.weight": (C,), "lm_head.weight": (V, C)})
    return shapes


def targets(config: RuntimeLMConfig, parameters: Mapping[str, Tensor]) -> dict[str, Target]:
    """Checkpoint name -> where it lands in this stage's parameters (rows of a packed one)."""
    shapes = checkpoint_shapes(config)
    found: dict[str, Target] = {}
    offsets: dict[str, int] = {}
    for name, shape in shapes.items():
        module, _, leaf = name.rpartition(".")
        owner, _, short = module.rpartition(".")
        packed = STACKED.get(short, short)
        parameter = f"{owner}.{packed}.{leaf}" if owner else f"{packed}.{leaf}"
        if parameter not in parameters:
            continue  # another stage's weight, or the tied head
        start = offsets.get(parameter, 0)  # shards come in packing order in `shapes`
        offsets[parameter] = start + shape[0]
        found[name] = (parameter, start, shape[0])
    return found


def load_weights(model: nn.Module, weights: Iterable[tuple[str, Tensor]]) -> set[str]:
    """Read every (name, tensor), check them all, then copy: the parameters loaded."""
    config: RuntimeLMConfig = model.config  # type: ignore[assignment]
    parameters = dict(model.named_parameters())  # a tied head appears once: the embedding
    known = checkpoint_shapes(config)
    wanted = targets(config, parameters)
    given: dict[str, Tensor] = {}
    problems: list[str] = []
    for name, tensor in weights:
        problems += _problems(name, tensor, known, given)
        given[name] = tensor
    problems += [f"missing weight {name}" for name in wanted if name not in given]
    if problems:
        raise ValueError(
            "load_weights refused the checkpoint (nothing was loaded): " + "; ".join(problems)
        )
    with torch.no_grad():
        for name, (parameter, start, rows) in wanted.items():
            parameters[parameter][start : start + rows].copy_(given[name])
    return {parameter for parameter, _, _ in wanted.values()}


def _problems(
    name: str, tensor: Tensor, known: dict[str, tuple[int, ...]], given: dict[str, Tensor]
) -> list[str]:
    if name not in known:
        return [f"unexpected weight {name}"]
    if name in given:
        return [f"duplicate weight {name}"]
    if tuple(tensor.shape) != known[name]:
        return [f"{name} has shape {tuple(tensor.shape)}, the checkpoint's is {known[name]}"]
    return []


__all__ = ["STACKED", "checkpoint_shapes", "load_weights", "targets"]
