"""A stranger's PT21 from the kit's words alone: the three rejections the kit names
(duplicate destinations first, then negative slots, then overflow, each message naming the
slot), then one index_copy_ into a flat [P * S, Hkv, D] view of the cache; nothing else
validated."""

import torch

VARIABLE = "DRILL_PT21_MODULE"


def write_slots_(cache, values, slot_mapping):
    P, S, H, D = cache.shape
    seen = set()
    for slot in slot_mapping.tolist():
        if slot in seen:
            raise ValueError(f"slot {slot} is a destination twice")
        seen.add(slot)
    for slot in slot_mapping.tolist():
        if slot < 0 or slot >= P * S:
            raise ValueError(f"slot {slot} is outside the {P * S} physical slots")
    flat = cache.view(P * S, H, D)  # the caller's storage: a write here is a write there
    flat.index_copy_(0, slot_mapping.to(torch.int64), values)
    return cache
