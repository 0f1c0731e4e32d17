"""Admission takes the shortest waiting request first, overtaking the head of the queue.

Shortest-job-first looks good for latency, but the contract admits in queue order:
a long request at the head can wait forever behind a stream of short ones.
"""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "SCHEDULER_MODULE"
EXPECTED_OWNER = "block_accounting"

policy = mutated_module(
    "scheduler.policy",
    [
        ("request = self.waiting[0]", "request = min(self.waiting, key=lambda r: r.remaining)"),
        ("self.waiting.popleft()", "self.waiting.remove(request)"),
    ],
    within="Policy._admit_waiting",
)
engine = mutated_module("scheduler.engine", rebind={"Policy": policy.Policy})
globals().update(export_with("scheduler", engine))
