"""A stranger's PT23 that scatters instead of gathering: row i of the old cache is written to
position parent_rows[i] of the new one, so a child receives the row whose parent it is."""

import torch

VARIABLE = "DRILL_PT23_MODULE"
EXPECTED_OWNER = "pt23"


def reorder_layer_caches(caches, parent_rows):
    if any(layer is None or len(layer) == 0 for layer in caches):
        raise ValueError("caches: a layer is missing")
    batch = caches[0][0].shape[0]
    if any(t.shape[0] != batch for layer in caches for t in layer):
        raise ValueError("caches: a layer has another batch size")
    if parent_rows.numel() and (int(parent_rows.min()) < 0 or int(parent_rows.max()) >= batch):
        raise ValueError("parent_rows: a parent outside the batch")
    rows = parent_rows.long()
    out = []
    for layer in caches:
        moved = []
        for tensor in layer:
            new = torch.zeros((len(rows), *tensor.shape[1:]), dtype=tensor.dtype)
            index = torch.arange(len(rows))
            keep = index < batch
            new[rows[keep]] = tensor[index[keep]]
            moved.append(new)
        out.append(tuple(moved))
    return out
