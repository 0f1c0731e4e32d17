"""A stranger's PT23 from the kit's words alone: the two rejections the kit names (a missing
layer, an out-of-range parent; messages naming the value), then advanced indexing of each
tensor by the parents, layer by layer, results as lists; nothing else validated."""

import torch

VARIABLE = "DRILL_PT23_MODULE"


def reorder_layer_caches(caches, parent_rows):
    batch = None
    for number, layer in enumerate(caches):
        if layer is None or len(layer) == 0:
            raise ValueError(f"layer {number} of the caches is missing")
        for tensor in layer:
            if batch is None:
                batch = tensor.shape[0]
            elif tensor.shape[0] != batch:
                raise ValueError(f"caches: layer {number} has batch {tensor.shape[0]}, not {batch}")
    for parent in parent_rows.tolist():
        if not 0 <= parent < batch:
            raise ValueError(f"parent {parent} is not a row of the old batch of {batch}")
    rows = parent_rows.to(torch.int64)
    return [[tensor[rows] for tensor in layer] for layer in caches]
