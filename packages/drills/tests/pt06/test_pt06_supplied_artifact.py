"""PT06's supplied artifact: the failing test fails on the start file, passes on the reference.

This project's packaging of the debug case, not the learner's contract (extension tests).
"""

from __future__ import annotations

import pytest

from gptlab_drills.catalogue import find
from gptlab_testkit.oracles import supplied_test_outcomes

pytestmark = [pytest.mark.owner("pt06"), pytest.mark.extension]


def test_the_supplied_test_fails_on_the_start_file_and_passes_on_the_reference():
    drill = find("PT06")
    start, test_file = drill.starting_artifact(), drill.failing_test()
    assert start is not None and start.is_file() and test_file is not None

    on_start = supplied_test_outcomes(test_file, drill.variable, str(start))
    on_reference = supplied_test_outcomes(test_file, drill.variable, drill.module)

    assert len(on_start) >= 4
    assert not any(on_start.values()), f"passes on the broken start file: {on_start}"
    assert all(on_reference.values()), f"fails on the reference: {on_reference}"
