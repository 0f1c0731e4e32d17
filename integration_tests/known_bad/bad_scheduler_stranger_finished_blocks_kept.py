"""A finished request's blocks are never given back (a stranger's heap engine).

The pool fills with the K/V of finished requests; once it is full nothing more can be
admitted: the engine livelocks, stepping with nothing to schedule.
"""

from _strangers import stranger_with

VARIABLE = "SCHEDULER_MODULE"
EXPECTED_OWNER = "block_accounting"
RUN = "isolated"  # it livelocks inside its own generate

Engine = stranger_with(
    "good_scheduler_heap_paged",
    [
        (
            "                finished.append(request.rid)\n"
            "                self._release(request)\n",
            "                finished.append(request.rid)\n",
        )
    ],
).Engine
