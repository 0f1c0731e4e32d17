"""A preempted request folds its output into its prompt and counts its budget afresh.

Recomputing "prompt + output" taken literally, it then emits up to max_new_tokens more
tokens than it had left (a stranger's engine).
"""

from _strangers import stranger_with

VARIABLE = "SCHEDULER_MODULE"
EXPECTED_OWNER = "preemption"

_module = stranger_with(
    "good_scheduler_heap_paged",
    [
        (
            "        self._release(victim)\n        self.running.remove(victim)\n",
            "        self._release(victim)\n"
            "        victim.prompt, victim.output = victim.prompt + victim.output, []\n"
            "        self.running.remove(victim)\n",
        ),
    ],
)
Engine = _module.Engine
