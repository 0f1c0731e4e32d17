"""No all-masked policy: softmax over a row of -inf gives NaN, in eager and exported alike."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT32_MODULE"
EXPECTED_OWNER = "pt32"

pt32 = mutated_module(
    "gptlab_drills.pt32",
    [
        (
            "        return torch.where(any_allowed, probs, torch.zeros_like(probs))",
            "        return torch.softmax(masked, dim=-1)",
        )
    ],
)
globals().update(export_with("gptlab_drills.pt32", pt32))
