"""A stranger's merge calls view() after the transpose, which raises on a contiguous
head-major [B, H, T, D] (attention's output, strided once transposed) instead of copying."""

VARIABLE = "DRILL_P03_MODULE"
EXPECTED_OWNER = "p03"


def split_heads(x, heads):
    B, T, C = x.shape
    if heads <= 0 or C % heads != 0:
        raise ValueError("C must be divisible by heads")
    return x.view(B, T, heads, C // heads).transpose(1, 2)


def merge_heads(x):
    if x.ndim != 4:
        raise ValueError("x must be 4-D")
    B, H, T, D = x.shape
    return x.transpose(1, 2).view(B, T, H * D)
