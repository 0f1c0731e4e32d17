"""modern_lm: the Llama-style decoder (M02) with Llama's checkpoint names as its module paths.

Graded names (``MODERN_LM_MODULE``): ``ModernLMConfig`` and ``ModernLM``. The layers are
published for the cache-aware modern variant (``cache_aware_lm.modern``), which builds
on them instead of owning a second copy.
"""

from .attention import GroupedQueryAttention, repeat_kv
from .checks import ArgumentTypeError, check_float, check_probability, check_size
from .config import ModernLMConfig
from .llama import config_from_llama, llama_config_kwargs
from .loss import IGNORE_INDEX, shifted_cross_entropy
from .mlp import SwiGLU
from .model import DecoderLayer, ModernLM, ModernLMOutput, ModernModel
from .norm import RMSNorm
from .rotary import RotaryEmbedding, apply_rotary, rotate_half

__all__ = [
    "IGNORE_INDEX",
    "ArgumentTypeError",
    "DecoderLayer",
    "GroupedQueryAttention",
    "ModernLM",
    "ModernLMConfig",
    "ModernLMOutput",
    "ModernModel",
    "RMSNorm",
    "RotaryEmbedding",
    "SwiGLU",
    "apply_rotary",
    "check_float",
    "check_probability",
    "check_size",
    "config_from_llama",
    "llama_config_kwargs",
    "repeat_kv",
    "rotate_half",
    "shifted_cross_entropy",
]
