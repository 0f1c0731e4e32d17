"""Shared test support for every gptlab suite.

One place for: loading the implementation under test from its variable
(`candidate`), the failure-to-owner routing table (`OWNERS`, routing.toml),
tensor assertions, and the pytest plugin (entry point `gptlab`) that routes
failures and prints scorecards. Suites import from here and nowhere else.

Tools built on the grader (gptlab_practice) use its public runners from here too:
`run_pytest` (a fresh interpreter) or `warm_up` + `ForkedRun` (forked from a process
that imported torch and the references once), `SuiteRun`, `grading_args`, `TestResult`.

Names are imported on first use (PEP 562): `python -m gptlab_testkit.grade` and the pytest
plugin answer a bad argument, or leave an unrelated suite alone, without importing torch.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .boundary import (
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
    from .candidates import VARIABLES, CandidateError, candidate, load_candidate
    from .cannot_grade import hint_for
    from .clauses import clause_order, readme_clauses
    from .owners import OWNERS, Owner
    from .reporting import broken_clauses, drill_labels, no_owning_drill
    from .results import TestResult
    from .suites import ForkedRun, SuiteRun, grading_args, run_pytest, warm_up
    from .tensors import (
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
    "hint_for": "cannot_grade",
    **dict.fromkeys(("clause_order", "readme_clauses"), "clauses"),
    **dict.fromkeys(("OWNERS", "Owner"), "owners"),
    **dict.fromkeys(("broken_clauses", "drill_labels", "no_owning_drill"), "reporting"),
    "TestResult": "results",
    **dict.fromkeys(("ForkedRun", "SuiteRun", "grading_args", "run_pytest", "warm_up"), "suites"),
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
