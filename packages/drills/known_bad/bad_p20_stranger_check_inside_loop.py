"""A stranger's loop writes token by token and checks each position as it goes (validation
after earlier writes; repeated positions silently overwrite)."""

VARIABLE = "DRILL_P20_MODULE"
EXPECTED_OWNER = "p20"


def append_kv_cache(k_cache, v_cache, k_new, v_new, positions):
    if k_cache.shape != v_cache.shape or k_new.shape != v_new.shape:
        raise ValueError("k_cache/v_cache and k_new/v_new must match")
    if positions.shape != (k_new.shape[0], k_new.shape[2]) or k_new.dtype != k_cache.dtype:
        raise ValueError("positions / k_new do not fit the cache")
    if v_new.dtype != v_cache.dtype:
        raise ValueError("v_new dtype differs from v_cache")
    S = k_cache.shape[2]
    for b in range(positions.shape[0]):
        for t in range(positions.shape[1]):
            p = int(positions[b, t])
            if not 0 <= p < S:
                raise ValueError(f"positions[{b}, {t}] = {p} out of range")
            k_cache[b, :, p] = k_new[b, :, t]
            v_cache[b, :, p] = v_new[b, :, t]
