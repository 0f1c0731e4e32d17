"""Decode rows are not charged to the token budget ("they are only one token each").

With several decodes running, a prefill chunk still takes the whole budget, so the
step computes more than max_num_batched_tokens tokens.
"""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "SCHEDULER_MODULE"
EXPECTED_OWNER = "batch_budget"

policy = mutated_module(
    "scheduler.policy",
    [("self.tokens -= tokens", "self.tokens -= tokens if tokens > 1 else 0")],
    within="_StepBudget.take",
)
engine = mutated_module("scheduler.engine", rebind={"Policy": policy.Policy})
globals().update(export_with("scheduler", engine))
