"""A stranger's PT35 from the kit's row alone: the capacity checked first (the message names
the numbers, not the argument), both caches written with one copy_ each into a slice of the
caller's storage, then all T steps attended at once, in float64, by SDPA under a causal mask
over the first filled + T slots; nothing else validated."""

import torch
import torch.nn.functional as F

VARIABLE = "DRILL_PT35_MODULE"


def fixed_cache_decode(queries, keys, values, k_cache, v_cache, filled=0):
    steps, capacity = queries.shape[1], k_cache.shape[2]
    if filled < 0 or filled + steps > capacity:
        raise ValueError(f"{filled} + {steps} positions do not fit {capacity} slots")
    end = filled + steps
    k_cache[:, :, filled:end].copy_(keys.permute(0, 2, 1, 3))
    v_cache[:, :, filled:end].copy_(values.permute(0, 2, 1, 3))
    slot = torch.arange(end, device=queries.device)
    position = filled + torch.arange(steps, device=queries.device)
    allowed = slot[None, :] <= position[:, None]  # [T, filled + T]: step t sees slots 0..p
    out = F.scaled_dot_product_attention(
        queries.permute(0, 2, 1, 3).double(),
        k_cache[:, :, :end].double(),
        v_cache[:, :, :end].double(),
        attn_mask=allowed,
    )
    return out.permute(0, 2, 1, 3).to(queries.dtype)
