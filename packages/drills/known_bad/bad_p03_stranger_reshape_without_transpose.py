"""A stranger's split reshapes [B, T, C] straight to [B, H, T, D] (no transpose), and merges
by the inverse reshape, so the round trip is exact while every head holds the wrong rows."""

VARIABLE = "DRILL_P03_MODULE"
EXPECTED_OWNER = "p03"


def split_heads(x, heads):
    if x.dim() != 3:
        raise ValueError("x must be [B, T, C]")
    B, T, C = x.shape
    if heads < 1 or C % heads:
        raise ValueError(f"heads={heads} must divide C={C}")
    return x.reshape(B, heads, T, C // heads)


def merge_heads(x):
    if x.dim() != 4:
        raise ValueError("x must be [B, H, T, D]")
    B, H, T, D = x.shape
    return x.reshape(B, T, H * D)
