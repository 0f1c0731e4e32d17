"""lookup_longest searches down from the raw limit, not a block boundary: aligned entries missed."""

import prefix_cache
from prefix_cache import PrefixCachedRunner, PrefixCacheNamespace, PrefixMatch
from prefix_cache.cache import clone_past
from prefix_cache.keys import check_count, check_namespace, token_tuple

VARIABLE = "PREFIX_CACHE_MODULE"
EXPECTED_OWNER = "prefix_key"

__all__ = ["PrefixCache", "PrefixCacheNamespace", "PrefixCachedRunner", "PrefixMatch"]


class PrefixCache(prefix_cache.PrefixCache):
    def lookup_longest(self, namespace, tokens, start_position=0, max_length=None):
        namespace = check_namespace(namespace)
        start_position = check_count(start_position, "start_position", minimum=0)
        ids = token_tuple(tokens)
        limit = len(ids) if max_length is None else min(len(ids), max_length)
        for length in range(limit, 0, -self.block_size):  # mistake: limit not rounded down
            key = self._key(namespace, start_position, ids[:length])
            snapshot = self._entries.get(key)
            if snapshot is not None:
                self._entries.move_to_end(key)
                self._hits += 1
                self._reused_tokens += length
                return PrefixMatch(ids[:length], clone_past(snapshot, length))
        self._misses += 1
        return None
