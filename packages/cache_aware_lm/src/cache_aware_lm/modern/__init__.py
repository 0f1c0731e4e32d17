"""cache_aware_lm.modern: the cache-aware contract with GQA, RoPE, RMSNorm and SwiGLU.

Graded through the same suite as the reference:
``CACHE_AWARE_LM_MODULE=cache_aware_lm.modern``. RMSNorm, RoPE and SwiGLU are
``modern_lm``'s (M02), re-exported here; this subpackage adds the cache. ``llama`` maps
Hugging Face ``LlamaForCausalLM`` configs and state dicts onto it (no transformers import).
"""

from modern_lm import RMSNorm, RotaryEmbedding, SwiGLU, apply_rotary

from ..attention import grouped_query_attention
from .config import ModernConfig
from .factories import make_eos_test_model, make_test_model
from .layers import GroupedQueryAttention, ModernBlock
from .llama import (
    config_from_llama,
    from_llama_state_dict,
    llama_config_kwargs,
    to_llama_state_dict,
)
from .model import ModernCacheAwareLM

__all__ = [
    "GroupedQueryAttention",
    "ModernBlock",
    "ModernCacheAwareLM",
    "ModernConfig",
    "RMSNorm",
    "RotaryEmbedding",
    "SwiGLU",
    "apply_rotary",
    "config_from_llama",
    "from_llama_state_dict",
    "grouped_query_attention",
    "llama_config_kwargs",
    "make_eos_test_model",
    "make_test_model",
    "to_llama_state_dict",
]
