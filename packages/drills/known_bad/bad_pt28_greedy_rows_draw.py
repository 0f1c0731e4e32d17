"""Greedy rows are "sampled" at temperature 1e-5: the argmax comes out, but the draw advances
the request's generator, so its later samples shift."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT28_MODULE"
EXPECTED_OWNER = "pt28"

pt28 = mutated_module(
    "gptlab_drills.pt28",
    [
        ("        if temperature == 0:\n            continue\n", ""),
        ("for row, t in enumerate(temps) if t != 0}", "for row, t in enumerate(temps)}"),
        (
            "logits[row : row + 1].float() / temperature",
            "logits[row : row + 1].float() / max(temperature, 1e-5)",
        ),
    ],
)
globals().update(export_with("gptlab_drills.pt28", pt28))
