"""A preempted request goes to the BACK of the waiting queue instead of the front.

Everything that arrived after it is admitted first, so it can be overtaken indefinitely.
"""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "SCHEDULER_MODULE"
EXPECTED_OWNER = "preemption"

policy = mutated_module(
    "scheduler.policy",
    [("self.waiting.appendleft(request)", "self.waiting.append(request)")],
    within="Policy._preempt",
)
engine = mutated_module("scheduler.engine", rebind={"Policy": policy.Policy})
globals().update(export_with("scheduler", engine))
