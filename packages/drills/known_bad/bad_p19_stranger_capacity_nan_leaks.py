"""A stranger's decode masks the capacity's scores but multiplies the weights into the raw
v_cache: a NaN or inf left in a row's capacity turns the row's output into NaN (0 x NaN)."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P19_MODULE"
EXPECTED_OWNER = "p19"

p19 = mutated_module(
    "gptlab_drills.p19",
    [
        (
            "values = v_cache.float().masked_fill(padding[:, None, :, None], 0.0)",
            "values = v_cache.float()",
        )
    ],
)
globals().update(export_with("gptlab_drills.p19", p19))
