"""A preempted request keeps its blocks while it waits (a stranger's heap engine).

Preemption is meant to free blocks for the others; keeping them until the request is
re-admitted frees nothing, so the request that asked still cannot run: a livelock.
"""

from _strangers import stranger_with

VARIABLE = "SCHEDULER_MODULE"
EXPECTED_OWNER = "preemption"
RUN = "isolated"  # it livelocks inside its own generate

Engine = stranger_with(
    "good_scheduler_heap_paged",
    [
        (
            "    def _preempt(self, victim, preempted):\n        self._release(victim)\n",
            "    def _preempt(self, victim, preempted):\n"
            "        victim.computed = 0  # its blocks are kept\n",
        ),
        (
            "    def _admit(self, request):\n",
            "    def _admit(self, request):\n        self._release(request)  # only now\n",
        ),
    ],
).Engine
