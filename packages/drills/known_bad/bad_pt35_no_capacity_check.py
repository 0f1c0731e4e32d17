"""Writes one step at a time and trusts indexing to stop a call past the capacity: the
steps that fit are written before an IndexError, and a negative filled wraps to the last
slots."""

import math

VARIABLE = "DRILL_PT35_MODULE"
EXPECTED_OWNER = "pt35"


def fixed_cache_decode(queries, keys, values, k_cache, v_cache, filled=0):
    out = queries.new_empty(queries.shape)
    for t in range(queries.shape[1]):
        position = filled + t
        k_cache[:, :, position] = keys[:, t]
        v_cache[:, :, position] = values[:, t]
        length = position + 1 if position >= 0 else k_cache.shape[2] + position + 1
        scores = queries[:, t].unsqueeze(2) @ k_cache[:, :, :length].transpose(2, 3)
        weights = (scores / math.sqrt(queries.shape[-1])).softmax(-1)
        out[:, t] = (weights @ v_cache[:, :, :length]).squeeze(2)
    return out
