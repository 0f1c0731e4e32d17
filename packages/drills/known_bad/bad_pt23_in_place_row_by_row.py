"""The reorder is written into the old tensors one child row at a time: once a row has been
overwritten, a later child whose parent is that row copies the new contents, not its parent's."""

VARIABLE = "DRILL_PT23_MODULE"
EXPECTED_OWNER = "pt23"


def reorder_layer_caches(caches, parent_rows):
    batch = caches[0][0].shape[0]
    for layer in caches:
        if layer is None or not layer or any(t.shape[0] != batch for t in layer):
            raise ValueError("caches: a layer is missing")
    parents = parent_rows.tolist()
    if any(p < 0 or p >= batch for p in parents) or len(parents) != batch:
        raise ValueError(f"parent_rows out of range: {parents}")
    for layer in caches:
        for tensor in layer:
            for child, parent in enumerate(parents):
                tensor[child] = tensor[parent]
    return [tuple(layer) for layer in caches]
