"""A finished request leaves the running set but never frees its blocks.

The pool shrinks with every finished request; used_blocks never returns to 0.
"""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "SCHEDULER_MODULE"
EXPECTED_OWNER = "block_accounting"

policy = mutated_module(
    "scheduler.policy",
    [("self.cache.free(request.request_id)", "pass  # blocks kept")],
    within="Policy.finish",
)
engine = mutated_module("scheduler.engine", rebind={"Policy": policy.Policy})
globals().update(export_with("scheduler", engine))
