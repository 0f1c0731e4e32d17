"""Earn the packing checks by reporting parameters instead of holding them.

The tests read the candidate's parameters through `state_dict()`, the candidate's own
report. This one keeps no Parameter at all: `load_weights` files the checkpoint away, and
`state_dict()` answers with the packed tensors the tests expect, built on the spot, while
every forward returns zeros. The packing tests also compare the model's outputs with the
oracle on those weights, so a report no forward stands behind earns only what real
parameters with no forward earn (its honest twin).
"""

from dataclasses import dataclass

import torch
from torch import nn

VARIABLE = "RUNTIME_LM_MODULE"
CHEAT = "a state_dict report with no parameters behind it"
SAYS = "FAIL"
EARNED = "_honest_runtime_lm_parameters_only.py"  # what real parameters without work earn


def set_attention_context(query_start_loc):
    pass


@dataclass(frozen=True)
class RuntimeLMConfig:
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
    pipeline_rank: int = 0
    pipeline_size: int = 1


class IntermediateTensors:
    def __init__(self, tensors):
        self.tensors = tensors


SHARDS = {"q_proj": "qkv_proj", "k_proj": "qkv_proj", "v_proj": "qkv_proj"}
SHARDS.update({"gate_proj": "gate_up_proj", "up_proj": "gate_up_proj"})


def packed_shapes(c):
    """The model's own names and shapes (every layer: one stage)."""
    H, K, D, C, F = (
        c.num_attention_heads,
        c.num_key_value_heads,
        c.head_dim,
        c.hidden_size,
        c.intermediate_size,
    )
    shapes = {"model.embed_tokens.weight": (c.vocab_size, C)}
    for i in range(c.num_hidden_layers):
        p = f"model.layers.{i}."
        shapes.update(
            {
                p + "input_layernorm.weight": (C,),
                p + "self_attn.qkv_proj.weight": ((H + 2 * K) * D, C),
                p + "self_attn.o_proj.weight": (C, H * D),
                p + "post_attention_layernorm.weight": (C,),
                p + "mlp.gate_up_proj.weight": (2 * F, C),
                p + "mlp.down_proj.weight": (C, F),
            }
        )
    shapes.update({"model.norm.weight": (C,), "lm_head.weight": (c.vocab_size, C)})
    return shapes


def pack(checkpoint):
    """Llama's separate shards, concatenated in order into the packed names."""
    packed = {}
    for name, tensor in checkpoint.items():
        module, _, leaf = name.rpartition(".")
        owner, _, short = module.rpartition(".")
        target = ".".join(filter(None, (owner, SHARDS.get(short, short), leaf)))
        packed[target] = torch.cat([packed[target], tensor]) if target in packed else tensor
    return packed


class RuntimeCausalLM(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.config = config
        self.filed = {name: torch.zeros(shape) for name, shape in packed_shapes(config).items()}

    def state_dict(self, *args, **kwargs):
        return dict(self.filed)  # a report: no Parameter stands behind it

    def embed_input_ids(self, input_ids):
        return torch.zeros(len(input_ids), self.config.hidden_size)

    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):
        return torch.zeros(len(positions), self.config.hidden_size)

    def compute_logits(self, hidden_states):
        return torch.zeros(len(hidden_states), self.config.vocab_size)

    def load_weights(self, weights):
        packed = pack({name: tensor.clone() for name, tensor in weights})
        self.filed.update(packed)
        return set(packed)
