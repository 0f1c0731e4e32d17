"""A preempted request resumes from its old progress although its blocks were freed.

Preemption frees the blocks but keeps `num_computed`; re-admission keeps the larger of
that and the prefix hit, so the request continues as if its K/V were still stored.
"""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "SCHEDULER_MODULE"
EXPECTED_OWNER = "preemption"

policy = mutated_module(
    "scheduler.policy",
    [
        (
            "request.num_computed = reused",
            "request.num_computed = max(reused, request.num_computed)",
        ),
        (
            "request.num_computed = 0\n        request.status = RequestStatus.WAITING",
            "request.status = RequestStatus.WAITING  # keeps its progress",
        ),
    ],
)
engine = mutated_module("scheduler.engine", rebind={"Policy": policy.Policy})
globals().update(export_with("scheduler", engine))
