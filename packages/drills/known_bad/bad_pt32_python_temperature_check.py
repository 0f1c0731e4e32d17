"""The temperature checked with a Python branch on data: eager rejects it, but
torch.export cannot trace the branch, so no program is made."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT32_MODULE"
EXPECTED_OWNER = "pt32"

pt32 = mutated_module(
    "gptlab_drills.pt32",
    [
        (
            '        torch._assert_async(torch.all(temperature > 0), "temperature must be > 0")',
            '        if bool((temperature <= 0).any()):\n            raise ValueError("temperature must be > 0")',
        )
    ],
)
globals().update(export_with("gptlab_drills.pt32", pt32))
