"""Every row's next token is read from the last column of the padded batch.

Right for the widest row only: a decode sharing a step with a longer prefill chunk
samples from the logits of a padding token.
"""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "SCHEDULER_MODULE"
EXPECTED_OWNER = "mixed_batch"
# The padded layout is the route of a model without the serving seam (the extension
# test that wraps the model in a recorder takes it); seam models go packed.
SCOPE = "all"

batch = mutated_module(
    "scheduler.batch",
    [("last = counts - 1", "last = torch.full_like(counts, input_ids.shape[1] - 1)")],
)
engine = mutated_module(
    "scheduler.engine", rebind={"forward_mixed_batch": batch.forward_mixed_batch}
)
globals().update(export_with("scheduler", engine))
