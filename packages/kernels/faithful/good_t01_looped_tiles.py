"""A stranger's axpy: 64-element tiles, each program looping over four of them (another tiling)."""

VARIABLE = "DRILL_T01_MODULE"

import triton
import triton.language as tl


@triton.jit
def k(a, X, Y, Z, n, sx, sy, sz, TILE: tl.constexpr, TILES: tl.constexpr):
    base = tl.program_id(0) * TILE * TILES
    for t in range(TILES):
        o = base + t * TILE + tl.arange(0, TILE)
        m = o < n
        x = tl.load(X + o * sx, mask=m).to(tl.float32)
        y = tl.load(Y + o * sy, mask=m).to(tl.float32)
        tl.store(Z + o * sz, (a * x + y).to(Z.dtype.element_ty), mask=m)


def axpy(a, x, y, out):
    n = x.numel()
    if x.dim() != 1 or y.shape != x.shape or out.shape != x.shape:
        raise ValueError("x, y, out must be 1-D of one length")
    if n:
        k[(triton.cdiv(n, 256),)](
            float(a), x, y, out, n, x.stride(0), y.stride(0), out.stride(0), TILE=64, TILES=4
        )
    return out
