"""The kit's model mocks A-D, each bound to a model build this project grades.

The kit names each mock's task (architecture from prose, incremental decoding, a runtime
port, an unfamiliar fragment), not an artifact to grade: binding each to one of this
project's graded builds is this project's choice. D's fragment is the top-two MoE (M05):
the kit's "MoE ... from equations only"; M10, the capstone, is graded on the same rubric
by `check`. B follows M03's branch (`branches`). Plain data.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .branches import M03, m03_target


@dataclass(frozen=True)
class ModelMock:
    letter: str  # the kit's A-D
    title: str
    build: str  # the kit's id of the graded build (M02)
    package: str  # the build's package, its grade target (modern_lm)
    minutes: int  # the full time: 60, C 75 (never cut to 60)
    task: str  # the kit's words for what the round asks

    @property
    def prompt(self) -> str:
        """The mock log's prompt id."""
        return f"model-{self.letter}"


MODEL_MOCKS = (
    ModelMock(
        "A", "architecture from prose", "M02", "modern_lm", 60,
        "config invariants, module tree, one layer, full model, 6 hidden tests;"
        " at minute 30 one detail changes (MHA to GQA, LayerNorm to RMSNorm, absolute to RoPE)",
    ),
    ModelMock(
        "B", "add incremental decoding", "M03", "cache_aware_lm", 60,
        "positions and a per-layer functional KV cache on a dense model; prove prefill =="
        " step decode; explain the move to paged",
    ),
    ModelMock(
        "C", "port into a runtime", "M04", "runtime_lm", 75,
        "drop training paths, flatten tokens, split the hidden forward from logits, strict"
        " load, mark the TP and custom-op boundaries",
    ),
    ModelMock(
        "D", "unfamiliar fragment", "M05", "moe_lm", 60,
        "an MoE from equations only: reference module, ownership table, random oracle,"
        " serving analysis",
    ),
)  # fmt: skip
MODEL_PROMPTS = {mock.prompt: mock for mock in MODEL_MOCKS}


def on_branch(mock: ModelMock, branch: str | None) -> ModelMock:
    """Mock B grades M03 on the learner's recorded branch (the advanced one:
    `cache_aware_modern`, the cache over their M02); the other mocks are as listed."""
    return replace(mock, package=m03_target(branch)) if mock.build == M03 else mock


def model_mocks(branch: str | None) -> tuple[ModelMock, ...]:
    """A-D with B on the recorded branch."""
    return tuple(on_branch(mock, branch) for mock in MODEL_MOCKS)
