"""More requests run at once than max_num_seqs allows (a stranger's engine)."""

from _strangers import stranger_with

VARIABLE = "SCHEDULER_MODULE"
EXPECTED_OWNER = "batch_budget"

_module = stranger_with(
    "good_scheduler_heap_paged",
    [
        (
            "while self.heap and left > 0 and not preempted and len(self.running) < self.seq_cap:",
            "while self.heap and left > 0 and not preempted:",
        ),
    ],
)
Engine = _module.Engine
