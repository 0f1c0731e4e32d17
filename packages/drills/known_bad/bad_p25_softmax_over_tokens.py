"""The router softmax normalises over the tokens (dim 0) instead of over the experts."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P25_MODULE"
EXPECTED_OWNER = "p25"

p25 = mutated_module(
    "gptlab_drills.p25",
    [
        (
            "torch.softmax(router_logits.float(), dim=-1)",
            "torch.softmax(router_logits.float(), dim=0)",
        )
    ],
)
globals().update(export_with("gptlab_drills.p25", p25))
