"""A stranger's PT21 that blends instead of copying: cache = cache * (1 - hit) + new * hit
over the whole pool. Written slots and untouched ones look right on ordinary numbers, but
-0.0 becomes +0.0 and a NaN already in a written slot survives the blend."""

import torch

VARIABLE = "DRILL_PT21_MODULE"
EXPECTED_OWNER = "pt21"


def write_slots_(cache, values, slot_mapping):
    P, S, H, D = cache.shape
    if slot_mapping.numel() and (int(slot_mapping.min()) < 0 or int(slot_mapping.max()) >= P * S):
        raise ValueError("slot_mapping holds a slot outside the cache")
    if torch.unique(slot_mapping).numel() != slot_mapping.numel():
        raise ValueError("slot_mapping names a slot twice")
    hit = torch.zeros(P * S, 1, 1, dtype=cache.dtype)
    hit[slot_mapping.long()] = 1
    new = torch.zeros(P * S, H, D, dtype=cache.dtype)
    new[slot_mapping.long()] = values
    blended = cache.reshape(P * S, H, D) * (1 - hit) + new * hit
    cache.copy_(blended.view(P, S, H, D))
