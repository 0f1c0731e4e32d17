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
