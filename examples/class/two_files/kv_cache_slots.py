"""Where each new token's K/V goes: a helper module beside `kv_cache.py` in the same folder.

A submission may be several plain modules in one folder; they import each other by
plain name (`from kv_cache_slots import ...`), as files beside a script do.
"""

import torch


def append_kv_cache(key_cache, value_cache, key_new, value_new, slots):
    for b in range(key_cache.shape[0]):
        key_cache[b].index_copy_(1, slots[b], key_new[b])
        value_cache[b].index_copy_(1, slots[b], value_new[b])


def slots_of(positions, starts):
    """Slot = absolute position - the row's start position."""
    return positions - torch.as_tensor(starts, device=positions.device)[:, None]
