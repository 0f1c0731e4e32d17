"""Time each reference kernel against its torch equivalent on a GPU, compile excluded.

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

import triton.testing

from gptlab_kernels import t01, t02, t03

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


if __name__ == "__main__":
    main()
