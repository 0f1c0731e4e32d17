"""PT23 beam cache reorder (transfer case; owner P12).

After a beam step, child beam i continues parent beam parent_rows[i]. Every layer's cache
(K, V and any per-row state such as sequence lengths, each with the batch as dim 0) is
gathered along the batch:

    out[layer][j][i] = caches[layer][j][parent_rows[i]]

Each result tensor is new memory (index_select copies), so two children of one parent are
independent before the next in-place append, and the caches passed in are only read.
Every layer and every parent is checked before anything is gathered.

Shapes: caches a list of L layers, each a tuple of tensors [B, ...]; parent_rows [B'] int32/
int64 in [0, B) -> a list of L tuples of tensors [B', ...] (each keeps its dtype and device).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from ._describe import described

LayerCache = tuple[Tensor, ...]


def reorder_layer_caches(caches: Sequence[LayerCache], parent_rows: Tensor) -> list[LayerCache]:
    """[tuple(t[parent_rows] for t in layer) for layer in caches], each a new tensor."""
    batch = _check_layers(caches)
    _check_parents(parent_rows, batch)
    rows = parent_rows.long()
    return [tuple(t.index_select(0, rows) for t in layer) for layer in caches]


def _check_layers(caches: Sequence[LayerCache]) -> int:
    """Every layer present, a tuple of tensors that agree on the batch size: that size."""
    if not isinstance(caches, (list, tuple)) or not caches:
        raise ValueError(f"caches must be a non-empty list of layers, got {described(caches)}")
    sizes = set()
    for index, layer in enumerate(caches):
        if not isinstance(layer, (list, tuple)) or not layer:
            raise ValueError(f"caches: layer {index} is missing, got {described(layer)}")
        for tensor in layer:
            if not isinstance(tensor, Tensor) or tensor.dim() == 0:
                raise ValueError(f"caches: layer {index} holds {described(tensor)}")
            sizes.add(tensor.shape[0])
    if len(sizes) != 1:
        raise ValueError(f"caches: the layers disagree on the batch size: {sorted(sizes)}")
    return sizes.pop()


def _check_parents(parent_rows: Tensor, batch: int) -> None:
    is_index = isinstance(parent_rows, Tensor) and parent_rows.dtype in (torch.int32, torch.int64)
    if not is_index or parent_rows.dim() != 1:
        raise ValueError(f"parent_rows must be a 1-D int tensor, got {described(parent_rows)}")
    if bool(((parent_rows < 0) | (parent_rows >= batch)).any()):
        raise ValueError(f"parent_rows must be in [0, {batch}), got {parent_rows.tolist()}")


__all__ = ["reorder_layer_caches"]
