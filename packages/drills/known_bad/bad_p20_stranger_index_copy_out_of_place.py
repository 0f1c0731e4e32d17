"""A stranger's append uses the out-of-place index_copy and rebinds the local names, so the
caller's caches never change (a new tensor where an in-place write was promised)."""

import torch

VARIABLE = "DRILL_P20_MODULE"
EXPECTED_OWNER = "p20"


def append_kv_cache(k_cache, v_cache, k_new, v_new, positions):
    B, H, S, D = k_cache.shape
    if v_cache.shape != k_cache.shape or positions.dim() != 2 or positions.shape[0] != B:
        raise ValueError("k_cache, v_cache and positions must agree on B")
    if k_new.shape != (B, H, positions.shape[1], D) or v_new.shape != k_new.shape:
        raise ValueError("k_new / v_new must be [B, H, T, D] with T = positions.shape[1]")
    if k_new.dtype != k_cache.dtype or v_new.dtype != v_cache.dtype:
        raise ValueError("k_new / v_new dtype differs from the cache")
    if bool(((positions < 0) | (positions >= S)).any()):
        raise ValueError("positions out of range")
    for row in positions.tolist():
        if len(set(row)) != len(row):
            raise ValueError("positions repeat within a row")
    rows_k, rows_v = [], []
    for b in range(B):
        rows_k.append(k_cache[b].index_copy(1, positions[b], k_new[b]))
        rows_v.append(v_cache[b].index_copy(1, positions[b], v_new[b]))
    k_cache, v_cache = torch.stack(rows_k), torch.stack(rows_v)
    return k_cache, v_cache
