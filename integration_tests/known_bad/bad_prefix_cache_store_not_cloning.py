"""store keeps views of the caller's K/V, so writing the source afterwards corrupts the snapshot."""

import prefix_cache
from prefix_cache import PrefixCachedRunner, PrefixCacheNamespace, PrefixMatch
from prefix_cache.cache import check_past
from prefix_cache.keys import check_count, check_namespace, token_tuple

VARIABLE = "PREFIX_CACHE_MODULE"
EXPECTED_OWNER = "snapshot_ownership"

__all__ = ["PrefixCache", "PrefixCacheNamespace", "PrefixCachedRunner", "PrefixMatch"]


class PrefixCache(prefix_cache.PrefixCache):
    def store(self, namespace, tokens, past_key_values, start_position=0):
        namespace = check_namespace(namespace)
        start_position = check_count(start_position, "start_position", minimum=0)
        ids = token_tuple(tokens)
        past = check_past(past_key_values, len(ids))
        for length in range(self.block_size, len(ids) + 1, self.block_size):
            key = self._key(namespace, start_position, ids[:length])
            if key in self._entries:
                self._entries.move_to_end(key)
            else:
                # mistake: slicing makes views of the source; .clone() is missing
                self._insert(key, tuple((k[:, :, :length], v[:, :, :length]) for k, v in past))
