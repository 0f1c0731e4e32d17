"""Each token is scored with its own row's logits (the prediction for the next token), not
the previous row's: the shift by one is forgotten."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT22_MODULE"
EXPECTED_OWNER = "pt22"

pt22 = mutated_module(
    "gptlab_drills.pt22",
    [
        (
            "previous = (torch.arange(N, device=logits.device) - 1).clamp(min=0)",
            "previous = torch.arange(N, device=logits.device)",
        )
    ],
)
globals().update(export_with("gptlab_drills.pt22", pt22))
