"""One token at a time, each slot checked just before its own write: a bad slot late in
slot_mapping is rejected after the earlier tokens are already in the cache."""

VARIABLE = "DRILL_PT21_MODULE"
EXPECTED_OWNER = "pt21"


def write_slots_(cache, values, slot_mapping):
    P, S = cache.shape[0], cache.shape[1]
    written = set()
    for i, slot in enumerate(slot_mapping.tolist()):
        if slot < 0 or slot >= P * S or slot in written:
            raise ValueError(f"slot_mapping: bad slot {slot}")
        cache[slot // S, slot % S] = values[i]
        written.add(slot)
