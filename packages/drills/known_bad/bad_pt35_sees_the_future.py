"""Writes all T new keys first, then attends every step over slots 0..filled+T-1: right for
a single step, but with T > 1 an early query sees the keys of later steps."""

import math

VARIABLE = "DRILL_PT35_MODULE"
EXPECTED_OWNER = "pt35"


def fixed_cache_decode(queries, keys, values, k_cache, v_cache, filled=0):
    steps, capacity = queries.shape[1], k_cache.shape[2]
    if filled < 0 or filled + steps > capacity:
        raise ValueError(f"filled + steps passes the capacity {capacity}")
    end = filled + steps
    k_cache[:, :, filled:end] = keys.transpose(1, 2)
    v_cache[:, :, filled:end] = values.transpose(1, 2)
    scale = 1.0 / math.sqrt(queries.shape[-1])
    scores = queries.transpose(1, 2) @ k_cache[:, :, :end].transpose(2, 3) * scale
    return (scores.softmax(-1) @ v_cache[:, :, :end]).transpose(1, 2)
