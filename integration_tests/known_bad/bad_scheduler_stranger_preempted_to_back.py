"""A preempted request goes to the back of the waiting queue (a stranger's engine)."""

from _strangers import stranger_with

VARIABLE = "SCHEDULER_MODULE"
EXPECTED_OWNER = "preemption"

_module = stranger_with(
    "good_scheduler_heap_paged",
    [
        (
            "heapq.heappush(self.heap, (next(self.front), next(self.serial), victim))",
            "heapq.heappush(self.heap, (next(self.back), next(self.serial), victim))",
        ),
    ],
)
Engine = _module.Engine
