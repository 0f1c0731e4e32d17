"""Partially prefilled requests are served before decode-ready ones (a stranger's engine).

A long prompt's chunk takes the budget first and running decodes wait: decode-first
is reversed."""

from _strangers import stranger_with

VARIABLE = "SCHEDULER_MODULE"
EXPECTED_OWNER = "batch_budget"

_module = stranger_with(
    "good_scheduler_heap_paged",
    [
        (
            "order = sorted(self.running, key=lambda r: (not r.decode_ready, r.admitted))",
            "order = sorted(self.running, key=lambda r: (r.decode_ready, r.admitted))",
        ),
    ],
)
Engine = _module.Engine
