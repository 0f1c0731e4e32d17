"""T05 tiled matmul with a fused epilogue: out = act(a @ b), act one of none, SiLU, GELU.

A 1-D grid of programs, each owning one [BM, BN] tile of out, walked in grouped order:
GROUP_M tile rows share their columns before the next group starts, so neighbouring
programs reuse the same tiles of b (L2 reuse on a GPU); the last group may be short. Each
program steps through K in BK slices, every load masked on its tails (the K tail must
load 0: it is summed), accumulating in fp32; the activation runs on the fp32 accumulator
and the result is rounded once, at the store. bf16 tiles are widened to fp32 before the
dot (Triton's interpreter multiplies bf16 tiles wrongly); fp16 tiles go to the dot as they
are, with an fp32 accumulator.
"""

from __future__ import annotations

# Before triton: its language functions (tl.max, tl.sum) are jitted when it is imported.
from . import _interpret  # noqa: F401

# isort: split
import torch
import triton
import triton.language as tl
from torch import Tensor

BM, BN, BK, GROUP_M = 32, 32, 32, 4
ACTIVATIONS = ("none", "silu", "gelu")

LEDGER = {
    "grid": "`(cdiv(M, BM) * cdiv(N, BN),)`: one program per [BM, BN] tile of out, grouped order",
    "tile": "BM = BN = BK = 32; GROUP_M = 4 tile rows per group",
    "pointer formula": "a + rows[:, None] * sa0 + ks[None, :] * sa1; b + ks[:, None] * sb0 + "
    "cols[None, :] * sb1; out + rows[:, None] * so0 + cols[None, :] * so1",
    "mask": "rows < M and ks < K on a's tile, ks < K and cols < N on b's (0 in: the K tail is "
    "summed), rows < M and cols < N on the store",
    "traffic": "at least `M * K * size(a) + K * N * size(b) + M * N * size(out)`; tiled, a is read "
    "cdiv(N, BN) times and b cdiv(M, BM) times (grouping keeps the rereads in L2)",
    "occupancy limiter": "registers and shared memory: the [BM, BN] fp32 accumulator plus the "
    "a and b tiles per stage; decode-like M (1-4) wastes most of a BM-row tile",
    "oracle": "act(a.double() @ b.double()) with torch's silu / gelu (erf), rounded once",
    "benchmark method": "triton.testing.do_bench against torch.matmul then the activation, "
    "compile excluded (warm-up first), decode-like M = 1..16 and prefill-like M = 512..4096, "
    "TFLOP/s and GB/s",
}


@triton.jit
def _matmul_kernel(a_ptr, b_ptr, out_ptr, M, N, K, sa0, sa1, sb0, sb1, so0, so1,
                   ACT: tl.constexpr, WIDEN: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                   BK: tl.constexpr, GROUP_M: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(N, BN)
    first_m = (pid // (GROUP_M * tiles_n)) * GROUP_M
    group_rows = tl.minimum(tl.cdiv(M, BM) - first_m, GROUP_M)
    pid_m = first_m + (pid % (GROUP_M * tiles_n)) % group_rows
    pid_n = (pid % (GROUP_M * tiles_n)) // group_rows
    rows = pid_m * BM + tl.arange(0, BM)
    cols = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rows[:, None] * sa0 + ks[None, :] * sa1,
                    mask=(rows < M)[:, None] & (ks < K)[None, :], other=0.0)  # fmt: skip
        b = tl.load(b_ptr + ks[:, None] * sb0 + cols[None, :] * sb1,
                    mask=(ks < K)[:, None] & (cols < N)[None, :], other=0.0)  # fmt: skip
        if WIDEN:
            a, b = a.to(tl.float32), b.to(tl.float32)
        acc += tl.dot(a, b, input_precision="ieee")
    if ACT == "silu":
        acc = acc / (1.0 + tl.exp(-acc))
    elif ACT == "gelu":
        acc = 0.5 * acc * (1.0 + tl.math.erf(acc * 0.7071067811865476))
    inside = (rows < M)[:, None] & (cols < N)[None, :]
    tl.store(out_ptr + rows[:, None] * so0 + cols[None, :] * so1,
             acc.to(out_ptr.dtype.element_ty), mask=inside)  # fmt: skip


def matmul_act(a: Tensor, b: Tensor, activation: str, out: Tensor) -> Tensor:
    """out = activation(a @ b) for a [M, K], b [K, N], out [M, N], any strides; returns out."""
    if not isinstance(a, Tensor) or a.dim() != 2:
        raise ValueError("a must be a 2-D tensor [M, K]")
    if not isinstance(b, Tensor) or b.dim() != 2 or b.shape[0] != a.shape[1] or b.dtype != a.dtype:
        raise ValueError(f"b must be [K, N] with K = {a.shape[1]} and a's dtype {a.dtype}")
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    (M, K), N = a.shape, b.shape[1]
    if not isinstance(out, Tensor) or tuple(out.shape) != (M, N):
        raise ValueError(f"out must have shape {(M, N)}")
    if M and N:
        grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
        _matmul_kernel[grid](a, b, out, M, N, K, *a.stride(), *b.stride(), *out.stride(),
                             ACT=activation, WIDEN=a.dtype != torch.float16, BM=BM, BN=BN, BK=BK,
                             GROUP_M=GROUP_M)  # fmt: skip
    return out


__all__ = ["ACTIVATIONS", "LEDGER", "matmul_act"]
