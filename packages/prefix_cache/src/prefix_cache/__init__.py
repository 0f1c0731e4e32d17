"""Exact-prefix K/V reuse across requests.

`PrefixCache` holds cloned full-prefix K/V snapshots at block boundaries, keyed
by `(namespace, absolute start position, exact prefix tokens)`, with
entry-level LRU. `PrefixCachedRunner` prefills a prompt through a cache-aware
model, reusing at most `block_size * floor((T - 1) / block_size)` cached tokens
and publishing the whole prompt's snapshots afterwards.
"""

from .cache import PrefixCache, PrefixCacheStats, PrefixMatch
from .keys import PrefixCacheNamespace
from .runner import PrefixCachedRunner, PrefixPrefillOutput, reuse_cap

__all__ = [
    "PrefixCache",
    "PrefixCacheNamespace",
    "PrefixCacheStats",
    "PrefixCachedRunner",
    "PrefixMatch",
    "PrefixPrefillOutput",
    "reuse_cap",
]
