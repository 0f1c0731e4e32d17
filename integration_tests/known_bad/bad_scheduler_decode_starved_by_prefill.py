"""Prefill chunks are served before the running decodes, so a long prompt starves them.

The running set is sorted with partially prefilled requests first: a prompt chunk
takes the whole token budget and the decode-ready requests wait a step (or many).
"""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "SCHEDULER_MODULE"
EXPECTED_OWNER = "batch_budget"

policy = mutated_module(
    "scheduler.policy", [("key=lambda r: not r.is_decode", "key=lambda r: r.is_decode")]
)
engine = mutated_module("scheduler.engine", rebind={"Policy": policy.Policy})
globals().update(export_with("scheduler", engine))
