# P20 attempt: request-owned fixed-capacity K/V, written in place by explicit slots.
import torch


def append_kv_cache(key_cache, value_cache, key_new, value_new, slots):
    with torch.inference_mode():
        B, H, T, D = key_new.shape
        idx = slots.to(key_cache.device).view(B, 1, T, 1).expand(B, H, T, D)
        key_cache.scatter_(2, idx, key_new)
        value_cache.scatter_(2, idx, value_new)


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
        with torch.inference_mode():
            shape = (batch_size, head_count, capacity, head_dim)
            self._kv = tuple(
                (
                    torch.zeros(shape, dtype=dtype, device=device),
                    torch.zeros(shape, dtype=dtype, device=device),
                )
                for _ in range(layer_count)
            )
            self._lens = torch.zeros(batch_size, dtype=torch.long, device=device)
            self._starts = torch.zeros(batch_size, dtype=torch.long, device=device)
        self.capacity = capacity
        self.reset(start_positions)

    @classmethod
    def from_past_key_values(
        cls, past_key_values, cache_lengths, cache_start_positions, *, capacity=None
    ):
        k0 = past_key_values[0][0]
        B, H, S, D = k0.shape
        c = cls(
            len(past_key_values),
            B,
            H,
            S if capacity is None else capacity,
            D,
            dtype=k0.dtype,
            device=k0.device,
        )
        c.load(past_key_values, cache_lengths, cache_start_positions)
        return c

    @property
    def storage(self):
        return self._kv

    @property
    def cache_lengths(self):
        with torch.inference_mode():
            return self._lens.clone()

    @property
    def cache_start_positions(self):
        with torch.inference_mode():
            return self._starts.clone()

    @property
    def logical_length(self):
        return int(self._lens.max()) if self._lens.numel() else 0

    def append(self, past_key_values, positions):
        with torch.inference_mode():
            positions = positions.to(self._starts.device)
            slots = positions - self._starts[:, None]
            for (kc, vc), (k, v) in zip(self._kv, past_key_values):
                append_kv_cache(kc, vc, k, v, slots)
            self._lens += positions.shape[1]

    def load(self, past_key_values, cache_lengths, cache_start_positions):
        with torch.inference_mode():
            lens = cache_lengths.to(self._lens.device)
            for (kc, vc), (k, v) in zip(self._kv, past_key_values):
                n = min(k.shape[2], self.capacity)
                keep = (torch.arange(n, device=kc.device)[None, :] < lens[:, None]).view(
                    lens.shape[0], 1, n, 1
                )
                kc.zero_()
                vc.zero_()
                kc[:, :, :n] = torch.where(keep, k[:, :, :n].to(kc), 0.0)
                vc[:, :, :n] = torch.where(keep, v[:, :, :n].to(vc), 0.0)
            self._lens.copy_(lens)
            self._starts.copy_(cache_start_positions)

    def model_inputs(self):
        L = self.logical_length
        if L == 0:
            return None, None, None
        with torch.inference_mode():
            pkv = tuple((k[:, :, :L], v[:, :, :L]) for k, v in self._kv)
            return pkv, self._lens.clone(), self._starts.clone()

    def snapshot(self):
        L = self.logical_length
        with torch.inference_mode():
            return tuple((k[:, :, :L].clone(), v[:, :, :L].clone()) for k, v in self._kv)

    def reset(self, start_positions=None):
        with torch.inference_mode():
            self._lens.zero_()
            if start_positions is None:
                self._starts.zero_()
            else:
                # The contract's starts are a [B] long tensor: nothing else is accepted.
                self._starts.copy_(start_positions)
