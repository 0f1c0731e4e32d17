"""Grading's default protections, shared by grade, the pytest plugin and practice.

A module of its own (no pytest, no torch) so that grade checks its arguments before
importing anything heavy.
"""

from __future__ import annotations

import os

# The slowest honest contract test takes a few seconds on a 2-core machine; the limit
# leaves a wide margin for busier machines.
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MEMORY_MIB = 4096


def default_workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))


# The judge's mode for a run (`judge.policy.judged`): "all", "default" (the variables in
# `judge.policy.JUDGED`), else none. Here so that grade and the plugin name it without torch.
JUDGE_VARIABLE = "GPTLAB_JUDGE"

# A grading run is started while grade lists its expected tests, and waits on this pipe
# (before any conftest or candidate is imported) until the list is made.
HOLD_FD_VARIABLE = "GPTLAB_HOLD_FD"
