"""The fake implementation states float32 whatever x's dtype: a bf16 call traces as fp32."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT33_MODULE"
EXPECTED_OWNER = "pt33"

pt33 = mutated_module(
    "gptlab_drills.pt33",
    [
        (
            "    return x.new_empty(x.shape)  #",
            "    return x.new_empty(x.shape, dtype=torch.float32)  #",
        )
    ],
)
globals().update(export_with("gptlab_drills.pt33", pt33))
