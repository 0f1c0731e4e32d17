"""Admission recomputes the whole prompt, never counting cached blocks (a stranger's engine)."""

from _strangers import stranger_with

VARIABLE = "SCHEDULER_MODULE"
EXPECTED_OWNER = "block_accounting"

_module = stranger_with(
    "good_scheduler_heap_paged",
    [
        (
            "        request.computed = self.cache.admit(request.paged_id, request.tokens, self.namespace)\n",
            "        self.cache.admit(request.paged_id, request.tokens, PagedNamespace('run', request.paged_id))\n        request.computed = 0\n",
        ),
    ],
)
Engine = _module.Engine
