"""A stranger's PT05 that checks only the width: query heads that are not a multiple of the
KV heads are unpacked as if grouped query attention could use them."""

VARIABLE = "DRILL_PT05_MODULE"
EXPECTED_OWNER = "pt05"


def unpack_qkv(packed, query_heads, kv_heads, head_dim):
    if packed.shape[-1] != (query_heads + 2 * kv_heads) * head_dim:
        raise ValueError("packed has the wrong width for these heads")
    heads = packed.reshape(packed.shape[0], query_heads + 2 * kv_heads, head_dim)
    return (
        heads[:, :query_heads],
        heads[:, query_heads : query_heads + kv_heads],
        heads[:, query_heads + kv_heads :],
    )
