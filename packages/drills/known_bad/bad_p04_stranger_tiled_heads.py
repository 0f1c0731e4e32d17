"""A stranger tiles the whole block of kv heads (`repeat`) instead of repeating each head
next to itself, so query head h reads kv head h % Hkv."""

VARIABLE = "DRILL_P04_MODULE"
EXPECTED_OWNER = "p04"


def repeat_kv_for_gqa(kv, query_heads):
    if kv.dim() != 4:
        raise ValueError("kv must be [B, Hkv, T, D]")
    n_kv = kv.shape[1]
    if query_heads <= 0 or query_heads % n_kv != 0:
        raise ValueError(f"query_heads={query_heads} must be a multiple of {n_kv}")
    return kv.repeat(1, query_heads // n_kv, 1, 1)
