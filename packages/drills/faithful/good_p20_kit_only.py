"""A stranger's P20 from the kit's words alone: every position checked first (range, then
repeats within a row), then one scatter_ per cache along the slot dim; nothing else
validated (the kit names only those two rejections)."""

VARIABLE = "DRILL_P20_MODULE"


def _check(positions, capacity):
    if positions.numel() and (positions.min() < 0 or positions.max() >= capacity):
        raise ValueError(f"positions must lie in [0, {capacity}): got {positions.tolist()}")
    ordered = positions.sort(dim=-1).values
    if (ordered[:, 1:] == ordered[:, :-1]).any():
        raise ValueError(f"positions repeat a slot within a row: {positions.tolist()}")


def append_kv_cache(k_cache, v_cache, k_new, v_new, positions):
    _check(positions, k_cache.shape[2])
    index = positions[:, None, :, None].expand_as(k_new)
    k_cache.scatter_(2, index, k_new)
    v_cache.scatter_(2, index, v_new)
