"""The honest twin of cheat_kv_cache_comparisons.py: the same KVCache (zeros, never
written), no patching. What it passes is what those values earn."""

import torch


def append_kv_cache(key_cache, value_cache, key_new, value_new, slots):
    return None


class KVCache:
    def __init__(self, layer_count, batch_size, head_count, capacity, head_dim, *,
                 dtype=torch.float32, device="cpu", start_positions=None):  # fmt: skip
        shape = (batch_size, head_count, capacity, head_dim)
        self.storage = tuple(
            (torch.zeros(shape, dtype=dtype, device=device),) * 2 for _ in range(layer_count)
        )
        self.cache_lengths = torch.zeros(batch_size, dtype=torch.long)
        self.cache_start_positions = torch.zeros(batch_size, dtype=torch.long)
        self.logical_length = 0

    def append(self, past_key_values, positions):
        return None

    def load(self, past_key_values, cache_lengths, cache_start_positions):
        return None

    def reset(self, start_positions=None):
        return None

    def model_inputs(self):
        return None, None, None

    def snapshot(self):
        return self.storage
