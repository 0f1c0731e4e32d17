"""cache_aware_lm.modern: the cache-aware contract with GQA, RoPE, RMSNorm and SwiGLU.

Graded through the same suite as the reference:
``CACHE_AWARE_LM_MODULE=cache_aware_lm.modern``.
"""

from ..attention import grouped_query_attention
from .config import ModernConfig
from .factories import make_eos_test_model, make_test_model
from .layers import GroupedQueryAttention, ModernBlock, RMSNorm, SwiGLU
from .model import ModernCacheAwareLM
from .rotary import RotaryEmbedding, apply_rotary

__all__ = [
    "GroupedQueryAttention",
    "ModernBlock",
    "ModernCacheAwareLM",
    "ModernConfig",
    "RMSNorm",
    "RotaryEmbedding",
    "SwiGLU",
    "apply_rotary",
    "grouped_query_attention",
    "make_eos_test_model",
    "make_test_model",
]
