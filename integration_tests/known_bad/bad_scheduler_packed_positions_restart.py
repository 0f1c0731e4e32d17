"""Wrong per-row positions in the packed step: every row's tokens restart at position 0.

The K/V still land in the right pool slots, but each chunk is rotated (or embedded)
as if its row had no cache: a decode at position 40 runs as position 0.
"""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "SCHEDULER_MODULE"
EXPECTED_OWNER = "mixed_batch"

packed = mutated_module(
    "scheduler.packed",
    [("torch.arange(first, first + len(t)) for t, first", "torch.arange(len(t)) for t, first")],
)
batch = mutated_module("scheduler.batch", rebind={"forward_packed": packed.forward_packed})
engine = mutated_module(
    "scheduler.engine", rebind={"forward_mixed_batch": batch.forward_mixed_batch}
)
globals().update(export_with("scheduler", engine))
