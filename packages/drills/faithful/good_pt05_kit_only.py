"""A stranger's PT05 from the kit's words alone: the rejections the kit names (a head ratio
that does not divide, a width that is not (Hq + 2*Hkv) * D), then one reshape to
[N, Hq + 2*Hkv, D] and slices along the head dim; nothing else validated."""

VARIABLE = "DRILL_PT05_MODULE"


def unpack_qkv(packed, query_heads, kv_heads, head_dim):
    if query_heads % kv_heads != 0:
        raise ValueError(f"query_heads {query_heads} is not a multiple of kv_heads {kv_heads}")
    heads = query_heads + 2 * kv_heads
    if packed.shape[-1] != heads * head_dim:
        raise ValueError(f"packed is {packed.shape[-1]} wide, want {heads} * head_dim")
    per_head = packed.reshape(packed.shape[0], heads, head_dim)
    q = per_head[:, :query_heads]
    k = per_head[:, query_heads : query_heads + kv_heads]
    v = per_head[:, query_heads + kv_heads :]
    return q, k, v
