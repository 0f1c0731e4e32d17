"""A stranger's P20 that defines repeats instead of rejecting them (the kit allows either):
every position range-checked first, then one token at a time in order, so a slot named
twice in a row holds its last token; nothing else validated."""

VARIABLE = "DRILL_P20_MODULE"


def append_kv_cache(k_cache, v_cache, k_new, v_new, positions):
    capacity = k_cache.shape[2]
    for row in positions.tolist():
        for slot in row:
            if not 0 <= slot < capacity:
                raise ValueError(f"positions holds {slot}, outside the cache's 0..{capacity - 1}")
    for b, row in enumerate(positions.tolist()):
        for t, slot in enumerate(row):
            k_cache[b, :, slot] = k_new[b, :, t]
            v_cache[b, :, slot] = v_new[b, :, t]
