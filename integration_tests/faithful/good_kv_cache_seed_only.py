"""A stranger's kv_cache doing exactly the contract's work: advanced-index writes, lists inside.

Written from the contract page alone, with no argument checks (the page names no kv_cache
error) and the contract's typing only: `start_positions` is a `[B]` long tensor or None
(a list of ints is not accepted), lengths and starts given to `load` are tensors. Lengths
and starts live as Python lists; the slot write is one advanced-index assignment.
"""

VARIABLE = "KV_CACHE_MODULE"  # graded through this variable by `nox -s known_bad`

import torch


def append_kv_cache(key_cache, value_cache, key_new, value_new, slots):
    rows = torch.arange(slots.shape[0], device=slots.device)[:, None].expand_as(slots)
    # cache[rows, :, slots] is [B, T, H, D]: the new K/V with heads and tokens swapped.
    key_cache[rows, :, slots] = key_new.transpose(1, 2)
    value_cache[rows, :, slots] = value_new.transpose(1, 2)


class KVCache:
    def __init__(
        self,
        layer_count,
        batch_size,
        head_count,
        capacity,
        head_dim,
        *,
        dtype=torch.float32,
        device="cpu",
        start_positions=None,
    ):
        shape = (batch_size, head_count, capacity, head_dim)
        self._layers = tuple(
            (
                torch.zeros(shape, dtype=dtype, device=device),
                torch.zeros(shape, dtype=dtype, device=device),
            )
            for _ in range(layer_count)
        )
        self._batch = batch_size
        self._lengths = [0] * batch_size
        self._starts = [0] * batch_size
        self.reset(start_positions)

    @classmethod
    def from_past_key_values(
        cls, past_key_values, cache_lengths, cache_start_positions, *, capacity=None
    ):
        first = past_key_values[0][0]
        batch, heads, slots, head_dim = first.shape
        cache = cls(
            len(past_key_values),
            batch,
            heads,
            slots if capacity is None else capacity,
            head_dim,
            dtype=first.dtype,
            device=first.device,
        )
        cache.load(past_key_values, cache_lengths, cache_start_positions)
        return cache

    @property
    def storage(self):
        return self._layers

    def _long(self, values):
        return torch.tensor(values, dtype=torch.long, device=self._layers[0][0].device)

    @property
    def cache_lengths(self):
        return self._long(self._lengths)

    @property
    def cache_start_positions(self):
        return self._long(self._starts)

    @property
    def logical_length(self):
        return max(self._lengths, default=0)

    def append(self, past_key_values, positions):
        slots = positions - self.cache_start_positions.to(positions.device)[:, None]
        for (key_cache, value_cache), (key, value) in zip(self._layers, past_key_values):
            append_kv_cache(key_cache, value_cache, key, value, slots)
        self._lengths = [length + positions.shape[1] for length in self._lengths]

    def load(self, past_key_values, cache_lengths, cache_start_positions):
        lengths = cache_lengths.tolist()
        for (key_cache, value_cache), (key, value) in zip(self._layers, past_key_values):
            for cache, source in ((key_cache, key), (value_cache, value)):
                cache.zero_()
                for row, length in enumerate(lengths):
                    cache[row, :, :length] = source[row, :, :length]
        self._lengths = lengths
        self._starts = cache_start_positions.tolist()

    def model_inputs(self):
        length = self.logical_length
        if length == 0:
            return None, None, None
        past = tuple((key[:, :, :length], value[:, :, :length]) for key, value in self._layers)
        return past, self.cache_lengths, self.cache_start_positions

    def snapshot(self):
        length = self.logical_length
        return tuple(
            (key[:, :, :length].clone(), value[:, :, :length].clone())
            for key, value in self._layers
        )

    def reset(self, start_positions=None):
        self._lengths = [0] * self._batch
        self._starts = [0] * self._batch if start_positions is None else start_positions.tolist()
