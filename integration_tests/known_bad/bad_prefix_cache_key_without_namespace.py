"""The prefix key leaves out the namespace, so one model's snapshots answer another's lookups."""

import prefix_cache
from prefix_cache import PrefixCachedRunner, PrefixCacheNamespace, PrefixMatch

VARIABLE = "PREFIX_CACHE_MODULE"
EXPECTED_OWNER = "prefix_key"

__all__ = ["PrefixCache", "PrefixCacheNamespace", "PrefixCachedRunner", "PrefixMatch"]


class PrefixCache(prefix_cache.PrefixCache):
    @staticmethod
    def _key(namespace, start_position, prefix):
        return (start_position, prefix)  # mistake: (namespace, start, tokens) expected
