"""A request runs on after emitting its EOS token, to its full budget (a stranger's engine)."""

from _strangers import stranger_with

VARIABLE = "SCHEDULER_MODULE"
EXPECTED_OWNER = "mixed_batch"

_module = stranger_with(
    "good_scheduler_heap_paged",
    [
        (
            "if token == request.eos or len(request.output) == request.budget:",
            "if len(request.output) == request.budget:  # EOS forgotten",
        ),
    ],
)
Engine = _module.Engine
