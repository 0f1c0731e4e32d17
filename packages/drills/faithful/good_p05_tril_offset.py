"""A stranger's P05 from the README contract alone: torch.tril with a diagonal offset for
the bottom-right causal part, masked_fill with -inf for the length part."""

import torch

VARIABLE = "DRILL_P05_MODULE"


def causal_length_mask(lengths, query_length, key_length=None, dtype=torch.float32):
    if key_length is None:
        key_length = query_length
    for name, size in {"query_length": query_length, "key_length": key_length}.items():
        if type(size) is not int or size < 1:
            raise ValueError(f"{name} must be a positive int, got {size!r}")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    if query_length < 1 or key_length < query_length:
        raise ValueError(f"need 1 <= query_length <= key_length, got {query_length}, {key_length}")
    if not torch.is_tensor(lengths) or lengths.ndim != 1:
        raise ValueError("lengths must be a 1-D tensor")
    if lengths.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"lengths must hold int32 or int64, got {lengths.dtype}")
    if lengths.min() < 1 or lengths.max() > key_length:
        raise ValueError("every lengths entry must lie in 1..key_length")
    ones = torch.ones(query_length, key_length, dtype=torch.bool, device=lengths.device)
    causal = torch.tril(ones, diagonal=key_length - query_length)
    padded = torch.arange(key_length, device=lengths.device) >= lengths.unsqueeze(-1)
    blocked = ~causal.unsqueeze(0) | padded.unsqueeze(1)
    mask = torch.zeros(
        lengths.shape[0], 1, query_length, key_length, dtype=dtype, device=lengths.device
    )
    return mask.masked_fill(blocked.unsqueeze(1), float("-inf"))
