"""moe_lm: a top-k sparse mixture of SwiGLU experts (M05) and a causal LM over M02's layers.

Graded names (``MOE_LM_MODULE``): ``SparseMoE``, ``MoELMConfig`` and ``MoECausalLM``.
"""

from .config import MoELMConfig
from .dispatch import dispatch_vectorized
from .mixtral import from_mixtral_state, mixtral_config_kwargs, to_mixtral_state
from .model import MoECausalLM, MoEDecoderLayer, MoELMOutput, MoEModel
from .routing import Routing, expert_counts, route, router_dtype
from .sparse_moe import MoEOutput, SparseMoE

__all__ = [
    "MoECausalLM",
    "MoEDecoderLayer",
    "MoELMConfig",
    "MoELMOutput",
    "MoEModel",
    "MoEOutput",
    "Routing",
    "SparseMoE",
    "dispatch_vectorized",
    "expert_counts",
    "from_mixtral_state",
    "mixtral_config_kwargs",
    "route",
    "router_dtype",
    "to_mixtral_state",
]
