"""The repair registers the stack in a ModuleList built as `[layer] * n_layers`: one layer,
registered n times, so the layers share their parameters."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT06_MODULE"
EXPECTED_OWNER = "pt06"

pt06 = mutated_module(
    "gptlab_drills.pt06",
    [(
        "DecoderLayer(d_model, n_heads, dropout) for _ in range(n_layers)",
        "[DecoderLayer(d_model, n_heads, dropout)] * n_layers",
    )],
)  # fmt: skip
globals().update(export_with("gptlab_drills.pt06", pt06))
