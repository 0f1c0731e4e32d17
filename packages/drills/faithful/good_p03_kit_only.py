"""A stranger's P03 from the kit's words alone: unflatten then transpose to split, transpose
then flatten (a contiguous copy) to merge; the one rejection the kit names (C % H != 0),
everything else left to torch."""

VARIABLE = "DRILL_P03_MODULE"


def split_heads(x, heads):
    channels = x.shape[-1]
    if channels % heads:
        raise ValueError(f"C = {channels} is not divisible by heads = {heads}")
    return x.unflatten(-1, (heads, channels // heads)).transpose(1, 2)


def merge_heads(x):
    return x.transpose(1, 2).contiguous().flatten(2)
