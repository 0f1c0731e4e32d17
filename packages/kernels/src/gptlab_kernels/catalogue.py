"""The Triton lane's kernels as gradable items: the grader finds them by entry point.

Each kernel is graded like a repair-lane drill (`DRILL_T01_MODULE`, its suite in
`packages/kernels/tests/t01`), with two differences its worker needs: it may import
triton, and `TRITON_INTERPRET=1` is set in its environment, so a candidate's kernel runs
under Triton's interpreter in the judge's worker, never in the judge.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kernel:
    id: str  # "T01"
    title: str
    difficulty: str
    minutes: int
    graded: tuple[str, ...]
    stems: tuple[str, ...]
    probes: tuple[str, ...]
    kind: str = "canonical"
    owner: str = ""
    preload: tuple[str, ...] = ()
    worker_distributions: tuple[str, ...] = ("triton",)
    worker_environment: tuple[tuple[str, str], ...] = (("TRITON_INTERPRET", "1"),)

    @property
    def key(self) -> str:
        return self.id.lower()

    @property
    def variable(self) -> str:
        return f"DRILL_{self.id}_MODULE"

    @property
    def module(self) -> str:
        return f"gptlab_kernels.{self.key}"

    @property
    def suite(self) -> str:
        return f"packages/kernels/tests/{self.key}"

    @property
    def label(self) -> str:
        return f"{self.id} {self.title} ({self.minutes}m)"


KERNELS: dict[str, Kernel] = {
    kernel.id: kernel
    for kernel in (
        Kernel(
            "T01", "masked vector op (Triton)", "E", 30, ("axpy",), ("t01", "axpy"),
            ("Which elements does the last program own, and what stops it touching the rest?",
             "At what n does the op stop being launch-bound and become bandwidth-bound?",
             "Why is the arithmetic fp32 when x and y are fp16, and where is it rounded?"),
        ),
        Kernel(
            "T02", "strided 2D copy, row bias, transpose (Triton)", "M", 40,
            ("add_row_bias", "transpose"), ("t02", "strided_copy"),
            ("Which pointer dim is adjacent in memory for x, and for x.t()?",
             "Why does a transpose through one tile coalesce either its reads or its writes?",
             "What does each tail mask guard, and what breaks without the column one?"),
        ),
        Kernel(
            "T03", "fused stable softmax (Triton)", "M", 45, ("softmax",),
            ("t03", "fused_softmax"),
            ("Why -inf for the masked lanes of the max but 0 for the sum?",
             "What does the row max subtraction prevent, and what does it cost?",
             "As rows grow, what limits one row per program (registers), and what then?"),
        ),
        Kernel(
            "T04", "fused residual RMSNorm (Triton)", "M", 50, ("fused_add_rmsnorm",),
            ("t04", "add_rmsnorm"),
            ("Which activation write and read does fusing the add into the norm remove?",
             "Why must the mean divide by H and not by the padded block width?",
             "Near which hidden size does one row per program stop fitting, and what then?"),
        ),
        Kernel(
            "T05", "tiled matmul with a fused epilogue (Triton)", "H", 75, ("matmul_act",),
            ("t05", "matmul_act"),
            ("Why must the K tail load 0 while the M and N tails only need a masked store?",
             "What does grouped program order buy, and how is a short last group handled?",
             "Why is a decode-like M of 1-4 wasteful for a 32-row tile, and what then?"),
        ),
        Kernel(
            "T06", "per-token int8 quantization (Triton)", "M", 50,
            ("quantize_per_token", "dequantize_per_token"), ("t06", "quantize_per_token"),
            ("What do the padded lanes of a head dim of 80 load, and why not anything else?",
             "What scale does an all-zero row get, and what breaks with 0?",
             "How many bytes do the scales add per row, against the int8 row itself?"),
        ),
        Kernel(
            "T07", "decode attention with GQA grouping (Triton)", "H", 90, ("decode_attention",),
            ("t07", "decode_attention_triton"),
            ("How many times is each KV chunk read with one program per query head, and with one "
             "per KV head?",
             "What does the grouped program pay for that saving (registers), and when does it stop"
             " paying?",
             "Why must slots past a row's length be masked in the scores, not only in the loads?"),
        ),
        Kernel(
            "T08", "paged decode attention (Triton)", "H", 120, ("paged_decode_attention",),
            ("t08", "paged_decode_attention"),
            ("Which two numbers locate position p of a row in the pool, and which comes from the "
             "table?",
             "What does a larger page buy and cost (table reads, wasted slots, sharing)?",
             "Why does a long row split over pages need a second launch, and what does it merge?"),
        ),
    )
}  # fmt: skip

__all__ = ["KERNELS", "Kernel"]
