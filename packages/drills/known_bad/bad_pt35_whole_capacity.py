"""Writes the new keys into the caller's caches as asked, then lets every step attend over
all C slots of the capacity: the stale tail (and the future) joins every softmax."""

import math

VARIABLE = "DRILL_PT35_MODULE"
EXPECTED_OWNER = "pt35"


def fixed_cache_decode(queries, keys, values, k_cache, v_cache, filled=0):
    steps, capacity = queries.shape[1], k_cache.shape[2]
    if filled < 0 or filled + steps > capacity:
        raise ValueError(f"filled + steps passes the capacity {capacity}")
    k_cache[:, :, filled : filled + steps] = keys.transpose(1, 2)
    v_cache[:, :, filled : filled + steps] = values.transpose(1, 2)
    out = queries.new_empty(queries.shape)
    for t in range(steps):
        scores = queries[:, t].unsqueeze(2) @ k_cache.transpose(2, 3) / math.sqrt(queries.shape[-1])
        out[:, t] = (scores.softmax(-1) @ v_cache).squeeze(2)
    return out
