"""The prefix key leaves out the absolute start, so K/V cached at one origin serve another."""

import prefix_cache
from prefix_cache import PrefixCachedRunner, PrefixCacheNamespace, PrefixMatch

VARIABLE = "PREFIX_CACHE_MODULE"
EXPECTED_OWNER = "prefix_key"

__all__ = ["PrefixCache", "PrefixCacheNamespace", "PrefixCachedRunner", "PrefixMatch"]


class PrefixCache(prefix_cache.PrefixCache):
    @staticmethod
    def _key(namespace, start_position, prefix):
        return (namespace, prefix)  # mistake: (namespace, start, tokens) expected
