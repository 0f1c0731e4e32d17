"""A stranger's PT05 that assumes the layout some checkpoints use, Q, K and V interleaved per
KV head ([N, Hkv, Hq/Hkv + 2, D]): right for one KV head, wrong for grouped or equal heads."""

VARIABLE = "DRILL_PT05_MODULE"
EXPECTED_OWNER = "pt05"


def unpack_qkv(packed, query_heads, kv_heads, head_dim):
    if query_heads % kv_heads:
        raise ValueError("query_heads must be a multiple of kv_heads")
    if packed.shape[-1] != (query_heads + 2 * kv_heads) * head_dim:
        raise ValueError("packed has the wrong width for these heads")
    group = query_heads // kv_heads
    grouped = packed.reshape(packed.shape[0], kv_heads, group + 2, head_dim)
    q = grouped[:, :, :group].reshape(packed.shape[0], query_heads, head_dim)
    return q, grouped[:, :, group], grouped[:, :, group + 1]
