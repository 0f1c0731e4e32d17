"""A stranger's PT36 from the kit's words alone: the one rejection the kit names (O not
divisible by the rank count, TypeError for a world size that is not an int, the message
naming the values), then each rank's rows as a float64 matmul on a transposed slice, the
local outputs as a tuple, and the gather as a write into preallocated column blocks."""

VARIABLE = "DRILL_PT36_MODULE"


def column_parallel_linear(x, weight, bias, world_size, gather=True):
    if not isinstance(world_size, int):
        raise TypeError(f"world_size must be an int, got {type(world_size).__name__}")
    out_features = weight.shape[0]
    if out_features % world_size != 0:
        raise ValueError(f"{out_features} output rows cannot be split over {world_size} ranks")
    rows = out_features // world_size
    local = []
    for rank in range(world_size):
        w = weight[rank * rows : (rank + 1) * rows].double()
        y = x.double() @ w.transpose(0, 1)
        if bias is not None:
            y = y + bias[rank * rows : (rank + 1) * rows].double()
        local.append(y.to(x.dtype))
    if not gather:
        return tuple(local)
    out = x.new_empty(*x.shape[:-1], out_features)
    for rank, y in enumerate(local):
        out[..., rank * rows : (rank + 1) * rows] = y
    return out
