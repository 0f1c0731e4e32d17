"""When blocks run out, the OLDEST unscheduled running request is preempted, not the newest.

Long-running requests lose their work to newcomers, again and again.
"""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "SCHEDULER_MODULE"
EXPECTED_OWNER = "preemption"

policy = mutated_module(
    "scheduler.policy",
    [("for request in reversed(self.running):", "for request in self.running:")],
    within="Policy._newest_unscheduled",
)
engine = mutated_module("scheduler.engine", rebind={"Policy": policy.Policy})
globals().update(export_with("scheduler", engine))
