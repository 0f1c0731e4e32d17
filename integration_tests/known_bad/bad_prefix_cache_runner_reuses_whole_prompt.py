"""The runner reuses every cached block of the prompt, leaving no token to compute logits for."""

import prefix_cache
from prefix_cache import PrefixCache, PrefixCacheNamespace, PrefixMatch

VARIABLE = "PREFIX_CACHE_MODULE"
EXPECTED_OWNER = "prefix_runner"

__all__ = ["PrefixCache", "PrefixCacheNamespace", "PrefixCachedRunner", "PrefixMatch"]


class PrefixCachedRunner(prefix_cache.PrefixCachedRunner):
    def max_reused_tokens(self, prompt_length):
        block_size = self.cache.block_size
        return block_size * (prompt_length // block_size)  # mistake: floor((T - 1) / B) expected
