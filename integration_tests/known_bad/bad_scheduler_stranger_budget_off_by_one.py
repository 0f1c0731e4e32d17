"""The token budget admits one token more than max_num_batched_tokens (a stranger's engine)."""

from _strangers import stranger_with

VARIABLE = "SCHEDULER_MODULE"
EXPECTED_OWNER = "batch_budget"

_module = stranger_with(
    "good_scheduler_heap_paged",
    [
        (
            "left, reserved, plan = self.token_budget, 0, {}",
            "left, reserved, plan = self.token_budget + 1, 0, {}",
        ),
    ],
)
Engine = _module.Engine
