"""PT35 extension: the supplied profiler harness, on the supplied start loop vs this
project's repair (the harness's own test: it profiles in one process, so it runs on the
project's code, never on a candidate's). Latency is printed, never asserted."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

import gptlab_drills.pt35 as repaired
from gptlab_drills.catalogue import DRILLS

pytestmark = [pytest.mark.owner("pt35"), pytest.mark.extension]


def supplied(name: str) -> ModuleType:
    start = DRILLS["PT35"].starting_artifact()
    assert start is not None
    path = Path(str(start)).with_name(f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"pt35_supplied_{name}", str(path))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass looks its module up while it is built
    spec.loader.exec_module(module)
    return module


harness, start = supplied("pt35_harness"), supplied("pt35_start")


@pytest.fixture(scope="module")
def report():
    return harness.compare(start, repaired, steps=32)


@pytest.mark.clause("PT35.13")
def test_the_repair_allocates_less_inside_operators(report):
    before, after = report["before"].allocated_bytes, report["after"].allocated_bytes
    print(f"allocated bytes: before {before}, after {after}")
    assert 0 < after < before / 2, (before, after)


@pytest.mark.clause("PT35.13")
@pytest.mark.parametrize("op", ["aten::cat", "aten::contiguous", "aten::item"])
def test_the_hunted_calls_fall_to_zero(report, op):
    steps, active = 32, 3  # about once a step (a 1-slot cache is already contiguous)
    assert report["before"].calls(op) >= (steps - 1) * active, report["before"].op_calls
    assert report["after"].calls(op) == 0, report["after"].op_calls


@pytest.mark.clause("PT35.13")
def test_parity_and_a_stable_cache_pointer_are_reported(report):
    assert report["parity"] is True
    assert report["stable_cache_pointer"] is True
    print(harness.render(report))  # the latency distribution: shown, never a verdict


@pytest.mark.clause("PT35.13")
def test_a_moving_cache_and_a_wrong_output_are_reported():
    class Regrowing:
        """A repair that rebinds each cache's storage and returns zeros."""

        @staticmethod
        def fixed_cache_decode(queries, keys, values, k_cache, v_cache, filled=0):
            k_cache.set_(k_cache.clone())
            v_cache.set_(v_cache.clone())
            return torch.zeros_like(queries)

    result = harness.compare(start, Regrowing, steps=4)

    assert result["parity"] is False
    assert result["stable_cache_pointer"] is False


@pytest.mark.clause("PT35.13")
def test_warm_up_iterations_are_outside_the_active_window():
    calls = []

    def first_call_allocates() -> None:
        calls.append(None)
        if len(calls) <= 2:  # the wait and warm-up iterations
            torch.ones(1 << 20)

    report = harness.profile_loop(first_call_allocates, wait=1, warmup=1, active=2, timed=2)

    assert report.allocated_bytes < 1 << 20, report.allocated_bytes
    assert len(report.latencies) == 2
