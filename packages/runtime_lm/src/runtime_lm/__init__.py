"""runtime_lm: a vLLM-shaped port of the Llama-style decoder (M04) over M02's layers.

Graded names (``RUNTIME_LM_MODULE``): ``RuntimeLMConfig``, ``RuntimeCausalLM``,
``IntermediateTensors`` and ``set_attention_context``.
"""

from .config import RuntimeLMConfig
from .context import attention_context, causal_mask, get_attention_context, set_attention_context
from .intermediate import IntermediateTensors
from .layers import MissingLayer, RuntimeAttention, RuntimeDecoderLayer, RuntimeMLP
from .loading import STACKED, checkpoint_shapes
from .model import RuntimeCausalLM, RuntimeModel

__all__ = [
    "STACKED",
    "IntermediateTensors",
    "MissingLayer",
    "RuntimeAttention",
    "RuntimeCausalLM",
    "RuntimeDecoderLayer",
    "RuntimeLMConfig",
    "RuntimeMLP",
    "RuntimeModel",
    "attention_context",
    "causal_mask",
    "checkpoint_shapes",
    "get_attention_context",
    "set_attention_context",
]
