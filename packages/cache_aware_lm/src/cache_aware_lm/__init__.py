"""cache_aware_lm: causal LMs whose batch rows carry their own cache length and origin.

The reference ``CacheAwareCausalLM`` (GPT-2-shaped, reusing ``tinygpt.GPTConfig``)
and, in ``cache_aware_lm.modern``, a grouped-query / rotary variant with the same
forward contract. Both compute with a ``CacheWriter`` (the functional one by
default) and the absolute-position mask. ``serve_generate`` is the serving decode
path: the same greedy tokens, with K/V written in place into request storage.
"""

# The modern variant is published as a subpackage (its own __all__).
from . import modern
from .attention import AttentionKernel, folded_grouped_query_attention, grouped_query_attention
from .cache_update import CacheWriter, FunctionalCacheWriter
from .compiled import (
    CompiledDecoder,
    StaticCacheWriter,
    StaticKV,
    compile_static,
    default_mode,
    use_inductor_cache,
)
from .factories import make_eos_test_model, make_test_model
from .generation import greedy_generate
from .masking import absolute_position_mask
from .model import CacheAwareCausalLM
from .output import CacheAwareOutput, LayerKV, PastKeyValues
from .protocol import CacheAwareModel, CacheAwareOutputLike
from .serving import InPlaceCacheWriter, RequestStorage, ServableModel, serve_generate
from .validation import CacheState, ModelGeometry, validate_forward_inputs

__all__ = [
    "AttentionKernel",
    "CacheAwareCausalLM",
    "CacheAwareModel",
    "CacheAwareOutput",
    "CacheAwareOutputLike",
    "CacheState",
    "CacheWriter",
    "CompiledDecoder",
    "FunctionalCacheWriter",
    "InPlaceCacheWriter",
    "LayerKV",
    "ModelGeometry",
    "PastKeyValues",
    "RequestStorage",
    "ServableModel",
    "StaticCacheWriter",
    "StaticKV",
    "absolute_position_mask",
    "compile_static",
    "default_mode",
    "folded_grouped_query_attention",
    "greedy_generate",
    "grouped_query_attention",
    "make_eos_test_model",
    "make_test_model",
    "modern",
    "serve_generate",
    "use_inductor_cache",
    "validate_forward_inputs",
]
