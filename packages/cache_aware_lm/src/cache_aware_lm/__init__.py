"""cache_aware_lm: causal LMs whose batch rows carry their own cache length and origin.

The reference ``CacheAwareCausalLM`` (GPT-2-shaped, reusing ``tinygpt.GPTConfig``)
and, in ``cache_aware_lm.modern``, a grouped-query / rotary variant with the same
forward contract. Both compute with a ``CacheWriter`` (the functional one by
default) and the absolute-position mask.
"""

from .attention import grouped_query_attention
from .cache_update import CacheWriter, FunctionalCacheWriter
from .factories import make_eos_test_model, make_test_model
from .generation import greedy_generate
from .masking import absolute_position_mask
from .model import CacheAwareCausalLM
from .output import CacheAwareOutput, LayerKV, PastKeyValues
from .validation import CacheState, ModelGeometry, validate_forward_inputs

__all__ = [
    "CacheAwareCausalLM",
    "CacheAwareOutput",
    "CacheState",
    "CacheWriter",
    "FunctionalCacheWriter",
    "LayerKV",
    "ModelGeometry",
    "PastKeyValues",
    "absolute_position_mask",
    "greedy_generate",
    "grouped_query_attention",
    "make_eos_test_model",
    "make_test_model",
    "validate_forward_inputs",
]
