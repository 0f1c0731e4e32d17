"""The step commits its K/V in the model call, before sampling: a failed draw half-advances it.

The pool's lengths grow while the request's ``num_computed`` does not, so after a
fault in one draw every later step sends positions the pool refuses (or, padded,
recomputes against the wrong cache): the requests in flight are lost, not just the
failing one. Step atomicity is this project's extension, so the ladder grades this
one on the whole suite.
"""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "SCHEDULER_MODULE"
EXPECTED_OWNER = "step_atomicity"
SCOPE = "all"  # a failed step committing nothing is this project's extension

engine = mutated_module(
    "scheduler.engine",
    [
        (
            "forward_mixed_batch(self.model, self.cache, ids, rows, staged=staged)",
            "forward_mixed_batch(self.model, self.cache, ids, rows)  # commits at once",
        )
    ],
)
globals().update(export_with("scheduler", engine))
