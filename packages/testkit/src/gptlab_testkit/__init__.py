"""Shared test support for every gptlab suite: its public face.

A suite imports from this package and from its top-level modules, and from nothing
below them (a test of the testkit's checks that):
- here: `candidate` (the implementation under test, from its variable), tensor
  assertions (`assert_close`, `assert_past_close`, `shares_storage`, ...), rejection
  checks (`assert_rejects`, `assert_rejected_unchanged`), the routing table (`OWNERS`);
- `objects`: same object, same memory (`assert_same_object`, `assert_same_memory`, ...),
  wherever the candidate's objects live; `oracles`: slow oracles and call guards;
  `boundary`: malformed-input cases; `tensors`, `kv_storage`, `slot_writes`: cache
  helpers; `models`, `mutants`: reference models and one-edit variants of a reference;
  `rank_pair`: two real Gloo ranks (the `two_ranks` fixture); `engine_driver`,
  `messages`, `clauses`: an engine's driver, message checks, README clause tracing.

Everything else lives in sub-packages, each about one thing: `loading` (what was handed
in), `judge` (running a candidate in a worker process; the worker is `gptlab_worker`),
`running` (the pytest plugin, runs, results, routing), `commands` (grade and a class),
`audit` (known-bad, cheats, mutation). Tools built on the grader (gptlab_practice) use
its public runners from here: `run_pytest` (a fresh interpreter) or `warm_up` +
`ForkedRun` (forked from a process that imported torch and the references once),
`SuiteRun`, `grading_args`, `TestResult`.

Names are imported on first use (PEP 562): `python -m gptlab_testkit.grade` and the pytest
plugin answer a bad argument, or leave an unrelated suite alone, without importing torch.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gptlab_testkit.boundary import (
        BAD_VALUE,
        WRONG_DTYPE,
        WRONG_KIND,
        CountingModel,
        assert_rejected_unchanged,
        assert_rejects,
        assert_state_unchanged,
        boundary_settings,
        state_fingerprint,
    )
    from gptlab_testkit.candidates import VARIABLES, CandidateError, candidate, load_candidate
    from gptlab_testkit.clauses import clause_order, readme_clauses
    from gptlab_testkit.loading.cannot_grade import hint_for
    from gptlab_testkit.running.owners import OWNERS, Owner
    from gptlab_testkit.running.reporting import broken_clauses, drill_labels, no_owning_drill
    from gptlab_testkit.running.results import TestResult
    from gptlab_testkit.running.suites import ForkedRun, SuiteRun, grading_args, run_pytest, warm_up
    from gptlab_testkit.tensors import (
        ATOL,
        RTOL,
        LayerKV,
        PastKeyValues,
        assert_close,
        assert_no_shared_storage,
        assert_past_close,
        assert_past_unchanged,
        clone_past,
        shares_storage,
        test_device,
    )

# Each public name and the module that defines it.
_SOURCES = {
    **dict.fromkeys(
        (
            "BAD_VALUE", "WRONG_DTYPE", "WRONG_KIND", "CountingModel", "assert_rejected_unchanged",
            "assert_rejects", "assert_state_unchanged", "boundary_settings", "state_fingerprint",
        ),
        "boundary",
    ),
    **dict.fromkeys(("VARIABLES", "CandidateError", "candidate", "load_candidate"), "candidates"),
    "hint_for": "loading.cannot_grade",
    **dict.fromkeys(("clause_order", "readme_clauses"), "clauses"),
    **dict.fromkeys(("OWNERS", "Owner"), "running.owners"),
    **dict.fromkeys(("broken_clauses", "drill_labels", "no_owning_drill"), "running.reporting"),
    "TestResult": "running.results",
    **dict.fromkeys(
        ("ForkedRun", "SuiteRun", "grading_args", "run_pytest", "warm_up"), "running.suites"
    ),
    **dict.fromkeys(
        (
            "ATOL", "RTOL", "LayerKV", "PastKeyValues", "assert_close", "assert_no_shared_storage",
            "assert_past_close", "assert_past_unchanged", "clone_past", "shares_storage",
            "test_device",
        ),
        "tensors",
    ),
}  # fmt: skip


def __getattr__(name: str) -> Any:
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{source}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "ATOL",
    "BAD_VALUE",
    "OWNERS",
    "RTOL",
    "VARIABLES",
    "WRONG_DTYPE",
    "WRONG_KIND",
    "CandidateError",
    "CountingModel",
    "ForkedRun",
    "LayerKV",
    "Owner",
    "PastKeyValues",
    "SuiteRun",
    "TestResult",
    "assert_close",
    "assert_no_shared_storage",
    "assert_past_close",
    "assert_past_unchanged",
    "assert_rejected_unchanged",
    "assert_rejects",
    "assert_state_unchanged",
    "boundary_settings",
    "broken_clauses",
    "candidate",
    "clause_order",
    "clone_past",
    "drill_labels",
    "grading_args",
    "hint_for",
    "load_candidate",
    "no_owning_drill",
    "readme_clauses",
    "run_pytest",
    "shares_storage",
    "state_fingerprint",
    "test_device",
    "warm_up",
]
