# PT35 hidden-allocation profiler hunt: the supplied decode loop (your starting file).
#
# It gives the right outputs and runs slowly: profile it with the supplied harness
# (gptlab_drills/artifacts/pt35_harness.py), before and after your repair:
#
#     python -m gptlab_drills.artifacts.pt35_harness this_file.py
#
# Then repair it. Your file must define
#
#     fixed_cache_decode(queries, keys, values, k_cache, v_cache, filled=0) -> out
#
# queries, keys, values [B, T, H, D]; k_cache, v_cache [B, H, C, D], allocated once by the
# caller (C is the capacity) and already holding `filled` earlier positions. It writes the
# T new keys and values into slots filled .. filled+T-1 of the caller's caches, in place,
# and returns out [B, T, H, D] equal to what decode_loop below computes for the same
# positions (step t attends over the first filled+t+1 slots). A call with
# filled + T > C, or filled < 0, raises ValueError before it writes anything.
# Keep decode_loop if you like: the harness profiles both and prints before vs after.
"""A decode loop that grows its cache, copies it every step and syncs the host every step."""

from __future__ import annotations

import math

import torch
from torch import Tensor

LOG: list[float] = []  # one logged score per step


def decode_loop(queries: Tensor, keys: Tensor, values: Tensor) -> Tensor:
    """queries, keys, values [B, T, H, D] -> out [B, T, H, D], from an empty cache."""
    B, T, H, D = queries.shape
    k_cache = queries.new_empty(B, H, 0, D)
    v_cache = queries.new_empty(B, H, 0, D)
    outputs = []
    for t in range(T):
        query = queries[:, t].reshape(B, H, 1, D)
        k_cache = torch.cat([k_cache, keys[:, t].reshape(B, H, 1, D)], dim=2)
        v_cache = torch.cat([v_cache, values[:, t].reshape(B, H, 1, D)], dim=2)
        keys_t = k_cache.transpose(2, 3).contiguous()
        scores = query @ keys_t / math.sqrt(D)
        attended = scores.softmax(-1) @ v_cache
        outputs.append(attended.transpose(1, 2).contiguous())
        LOG.append(scores.max().item())
    return torch.cat(outputs, dim=1)
