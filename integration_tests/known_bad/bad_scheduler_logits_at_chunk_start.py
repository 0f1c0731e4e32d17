"""The packed step reads each row's next-token logits at its chunk's FIRST token.

Right for a decode (a one-token chunk); a prompt chunk that reaches the end of its
prompt samples the token after its first chunk token instead of after its last.
"""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "SCHEDULER_MODULE"
EXPECTED_OWNER = "mixed_batch"

packed = mutated_module("scheduler.packed", [("last=ends - 1,", "last=ends - counts_R,")])
batch = mutated_module("scheduler.batch", rebind={"forward_packed": packed.forward_packed})
engine = mutated_module(
    "scheduler.engine", rebind={"forward_mixed_batch": batch.forward_mixed_batch}
)
globals().update(export_with("scheduler", engine))
