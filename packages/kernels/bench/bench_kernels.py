"""Time each reference kernel (T01-T08) against its torch equivalent on a GPU, compile excluded.

    python packages/kernels/bench/bench_kernels.py      (bench/gpu_check.sh runs it)

For each kernel and size: the median time of `triton.testing.do_bench` (which warms up
first, so compilation is not timed), the bytes the kernel must move (its LEDGER's
traffic, from the shapes), achieved GB/s and the fraction of the device's peak. Small
sizes show the launch-bound regime, large ones the bandwidth-bound one (T01.10).
"""

from __future__ import annotations

import sys

import torch

if not torch.cuda.is_available():
    sys.exit("bench_kernels: no CUDA device here; the Triton lane's benchmark needs a GPU")

import torch.nn.functional as F
import triton.testing

from gptlab_kernels import t01, t02, t03, t04, t05, t06, t07, t08

# Peak HBM bandwidth (GB/s) by device name, where torch does not report the memory clock.
PEAKS = {"H100": 3350.0, "H200": 4800.0, "A100": 2039.0}


def peak_gbps() -> float:
    props = torch.cuda.get_device_properties(0)
    clock, width = getattr(props, "memory_clock_rate", 0), getattr(props, "memory_bus_width", 0)
    if clock and width:  # kHz, bits; double data rate
        return 2 * clock * 1e3 * width / 8 / 1e9
    return next((v for k, v in PEAKS.items() if k in props.name), float("nan"))


def row(name: str, size: str, ms_kernel: float, ms_torch: float, nbytes: int, peak: float) -> str:
    gbps = nbytes / ms_kernel / 1e6
    return (f"{name:4} {size:>14} triton {ms_kernel * 1e3:9.1f} us  torch {ms_torch * 1e3:9.1f} us"
            f"  {gbps:8.1f} GB/s  {gbps / peak:6.1%} of peak")  # fmt: skip


def timed(fn: object, *args: object) -> float:
    """Median milliseconds of fn(*args), warmed up first (compilation not timed)."""
    return float(triton.testing.do_bench(lambda: fn(*args)))  # type: ignore[operator]


def _add_rms_norm(x: torch.Tensor, r: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return F.rms_norm(x + r, (x.shape[1],), w, 1e-6)


def _matmul_silu(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.silu(a @ b)


def _quantize(x: torch.Tensor) -> torch.Tensor:
    return torch.round(x / (x.abs().amax(-1, keepdim=True) / 127)).to(torch.int8)


def _sdpa(q: torch.Tensor, kv: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, kv, kv, enable_gqa=True)


def main() -> None:
    peak = peak_gbps()
    print(f"device: {torch.cuda.get_device_name(0)}, peak {peak:.0f} GB/s")
    for n in (1 << 10, 1 << 16, 1 << 20, 1 << 24, 1 << 27):
        x, y, out = (torch.randn(n, device="cuda") for _ in range(3))
        k, t = timed(t01.axpy, 2.0, x, y, out), timed(torch.add, y, 2.0 * x)
        print(row("T01", str(n), k, t, 3 * n * 4, peak))
    for m, n in ((1024, 1024), (4096, 4096), (8192, 8192)):
        x, bias = torch.randn(m, n, device="cuda"), torch.randn(n, device="cuda")
        out, out_t = torch.empty(m, n, device="cuda"), torch.empty(n, m, device="cuda")
        k, t = timed(t02.add_row_bias, x, bias, out), timed(torch.add, x, bias)
        print(row("T02b", f"{m}x{n}", k, t, 2 * m * n * 4 + n * 4, peak))
        k, t = timed(t02.transpose, x, out_t), timed(out_t.copy_, x.t())
        print(row("T02t", f"{m}x{n}", k, t, 2 * m * n * 4, peak))
    for m, n in ((4096, 128), (4096, 1024), (4096, 4096), (1024, 16384)):
        x, out = torch.randn(m, n, device="cuda"), torch.empty(m, n, device="cuda")
        k, t = timed(t03.softmax, x, out), timed(torch.softmax, x, -1)
        print(row("T03", f"{m}x{n}", k, t, 2 * m * n * 4, peak))
    for m, n in ((4096, 1024), (4096, 4096), (1024, 8192), (256, 16384)):
        x, r, w = (
            torch.randn(m, n, device="cuda"),
            torch.randn(m, n, device="cuda"),
            torch.randn(n, device="cuda"),
        )
        out, h = torch.empty_like(x), torch.empty_like(x)
        k = timed(t04.fused_add_rmsnorm, x, r, w, 1e-6, out, h)
        t = timed(_add_rms_norm, x, r, w)
        print(row("T04", f"{m}x{n}", k, t, 4 * m * n * 4 + n * 4, peak))
    for m in (1, 16, 512, 4096):  # decode-like, then prefill-like token counts
        a = torch.randn(m, 4096, device="cuda", dtype=torch.float16)
        b = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
        out = torch.empty(m, 4096, device="cuda", dtype=torch.float16)
        k, t = timed(t05.matmul_act, a, b, "silu", out), timed(_matmul_silu, a, b)
        print(row("T05", f"{m}x4096x4096", k, t, 2 * (m * 4096 * 2 + 4096 * 4096), peak)
              + f"  {2 * m * 4096 * 4096 / k / 1e9:8.1f} TFLOP/s")  # fmt: skip
    for m, d in ((4096, 128), (65536, 128), (16384, 4096)):
        x, s = torch.randn(m, d, device="cuda"), torch.empty(m, device="cuda")
        q = torch.empty(m, d, device="cuda", dtype=torch.int8)
        k = timed(t06.quantize_per_token, x, q, s)
        t = timed(_quantize, x)
        print(row("T06", f"{m}x{d}", k, t, m * d * 5 + 4 * m, peak))
    for B, L in ((1, 4096), (32, 1024), (8, 16384)):
        q = torch.randn(B, 32, 1, 128, device="cuda", dtype=torch.float16)
        kc = torch.randn(B, 8, L, 128, device="cuda", dtype=torch.float16)
        lengths, out = torch.full((B,), L, device="cuda"), torch.empty_like(q)
        k = timed(t07.decode_attention, q, kc, kc, lengths, out)
        t = timed(_sdpa, q, kc)
        print(row("T07", f"B{B} L{L}", k, t, 2 * B * 8 * L * 128 * 2, peak))
        for page in (16, 64):
            n = L // page
            pool = kc.view(B, 8, n, page, 128).permute(0, 2, 3, 1, 4).reshape(B * n, page, 8, 128)
            table = torch.arange(B * n, device="cuda").view(B, n)
            k = timed(t08.paged_decode_attention, q, pool, pool, table, lengths, out)
            print(row("T08", f"B{B} L{L} p{page}", k, t, 2 * B * 8 * L * 128 * 2, peak))


if __name__ == "__main__":
    main()
