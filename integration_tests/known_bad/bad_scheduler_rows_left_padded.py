"""Wrong per-row positions in a mixed batch: short rows' tokens are left-padded.

Positions still start at each row's cache length, so a row shorter than the widest
chunk has its tokens at positions shifted by its padding, and the K/V stored for it
(and the logits read) are those of padding tokens.
"""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "SCHEDULER_MODULE"
EXPECTED_OWNER = "mixed_batch"
# The padded layout is the route of a model without the serving seam (the extension
# test that wraps the model in a recorder takes it); seam models go packed.
SCOPE = "all"

batch = mutated_module(
    "scheduler.batch",
    [("input_ids[row, : len(tokens)]", "input_ids[row, width - len(tokens) :]")],
)
engine = mutated_module(
    "scheduler.engine", rebind={"forward_mixed_batch": batch.forward_mixed_batch}
)
globals().update(export_with("scheduler", engine))
