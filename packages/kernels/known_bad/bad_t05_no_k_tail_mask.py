"""The K tail is not masked on the loads: the last K slice reads past a's rows and b's
columns, and that poison is summed into every output."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_T05_MODULE"
EXPECTED_OWNER = "t05"

t05 = mutated_module(
    "gptlab_kernels.t05",
    [
        ("mask=(rows < M)[:, None] & (ks < K)[None, :], other=0.0)", "mask=(rows < M)[:, None])"),
        ("mask=(ks < K)[:, None] & (cols < N)[None, :], other=0.0)", "mask=(cols < N)[None, :])"),
    ],
)
globals().update(export_with("gptlab_kernels.t05", t05))
