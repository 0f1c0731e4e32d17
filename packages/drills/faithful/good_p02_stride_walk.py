"""A stranger's P02 from the README contract alone: compute the would-be strides of the new
shape by walking both shapes from the innermost dim, as the view rule describes."""

import torch

VARIABLE = "DRILL_P02_MODULE"


def can_view_without_copy(x, new_shape):
    if not torch.is_tensor(x):
        raise TypeError(f"x must be a tensor, got {type(x)!r}")
    if not isinstance(new_shape, (tuple, list, torch.Size)):
        raise TypeError(f"new_shape must be a tuple or list of ints, got {new_shape!r}")
    if not all(type(s) is int for s in new_shape):
        raise TypeError(f"new_shape must hold ints, got {new_shape!r}")
    new_shape = list(new_shape)
    total = 1
    for s in new_shape:
        if s < 0:
            raise ValueError(f"new_shape has a negative size: {new_shape}")
        total *= s
    if total != x.numel():
        raise ValueError(f"new_shape {new_shape} has {total} elements, x has {x.numel()}")
    if x.numel() == 0:
        return True
    old = [(n, st) for n, st in zip(x.shape, x.stride()) if n != 1]
    new = [n for n in new_shape if n != 1]
    # walk from the innermost dims outwards; each old contiguous run must be matched exactly
    oi, ni = len(old) - 1, len(new) - 1
    while oi >= 0:
        run = old[oi][0]
        base = old[oi][1]
        while oi > 0 and old[oi - 1][1] == base * run:
            oi -= 1
            run *= old[oi][0]
        got = 1
        while got < run and ni >= 0:
            got *= new[ni]
            ni -= 1
        if got != run:
            return False
        oi -= 1
    return True
