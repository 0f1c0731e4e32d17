"""Clones the caches before writing (to "not touch the caller's tensors"): the outputs are
right, but the caller's fixed-capacity storage never receives the new keys and values."""

import math

VARIABLE = "DRILL_PT35_MODULE"
EXPECTED_OWNER = "pt35"


def fixed_cache_decode(queries, keys, values, k_cache, v_cache, filled=0):
    steps, capacity = queries.shape[1], k_cache.shape[2]
    if filled < 0 or filled + steps > capacity:
        raise ValueError(f"filled + steps passes the capacity {capacity}")
    k_cache, v_cache = k_cache.clone(), v_cache.clone()
    k_cache[:, :, filled : filled + steps] = keys.transpose(1, 2)
    v_cache[:, :, filled : filled + steps] = values.transpose(1, 2)
    out = queries.new_empty(queries.shape)
    for t in range(steps):
        length = filled + t + 1
        scores = queries[:, t].unsqueeze(2) @ k_cache[:, :, :length].transpose(2, 3)
        weights = (scores / math.sqrt(queries.shape[-1])).softmax(-1)
        out[:, t] = (weights @ v_cache[:, :, :length]).squeeze(2)
    return out
