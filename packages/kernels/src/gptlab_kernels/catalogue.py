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
    )
}  # fmt: skip

__all__ = ["KERNELS", "Kernel"]
