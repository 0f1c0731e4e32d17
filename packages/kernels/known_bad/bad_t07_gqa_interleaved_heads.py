"""A GQA head mapped to the wrong KV head: query head h reads KV head h % Hkv (interleaved)
instead of h // (Hq / Hkv) (consecutive query heads share a KV head)."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_T07_MODULE"
EXPECTED_OWNER = "t07"

t07 = mutated_module(
    "gptlab_kernels.t07",
    [("heads = g * GROUP + tl.arange(0, G)", "heads = g + tl.arange(0, G) * tl.num_programs(1)")],
)
globals().update(export_with("gptlab_kernels.t07", t07))
