"""The repair lane is whole: every drill the routing names exists, runs and is graded.

These check this project's own tables (the catalogue, routing.toml, the suites on disk),
not a candidate: extension tests owned by the grading machinery.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from gptlab_drills.catalogue import DRILLS, find
from gptlab_testkit import OWNERS, VARIABLES
from gptlab_testkit.candidates import drill_catalogue
from gptlab_testkit.oracles import supplied_test_outcomes

pytestmark = [pytest.mark.owner("grading"), pytest.mark.extension]

TESTS = Path(__file__).parent
# Owners of the grading tools themselves, not of a learner's invariant: no drill repairs them.
# Owners of tools no learner writes (the argument checks the references share among them).
TOOL_OWNERS = {"grading", "practice", "package_isolation", "trained_pair", "argument_checks"}


def test_every_drill_the_routing_names_exists():
    named = {drill for owner in OWNERS.values() for drill in (*owner.drills, *owner.related)}
    gradable = set(DRILLS) | set(drill_catalogue())  # and the Triton lane's kernels
    # The Triton lane's ids are checked where its package (and triton) is installed.
    named = {drill for drill in named if drill in gradable or not drill.startswith("T")}
    assert named <= gradable, f"routing.toml names drills that do not exist: {named - gradable}"


def test_every_learner_facing_owner_routes_to_at_least_one_drill():
    # An owning drill, or (where no drill states the invariant) related drills to practise
    # beside the repair in the mechanism itself: a learner is never left with no drill.
    bare = [
        key
        for key, owner in OWNERS.items()
        if not (owner.drills or owner.related) and key not in TOOL_OWNERS
    ]
    assert not bare, f"owners with neither a repair drill nor a related one: {bare}"


@pytest.mark.parametrize("drill_id", sorted(DRILLS))
def test_every_drill_is_a_graded_variable_with_an_owner_and_a_suite(drill_id):
    drill = DRILLS[drill_id]
    assert drill.variable in VARIABLES, f"{drill.variable} is not a grading variable"
    assert VARIABLES[drill.variable].required_names == drill.graded
    assert drill.key in OWNERS and OWNERS[drill.key].package == "drills"
    assert drill.id in OWNERS[drill.key].drills
    suite = TESTS / drill.key
    assert sorted(suite.glob("test_*.py")), f"{drill_id} has no suite in {suite}"


@pytest.mark.parametrize("drill_id", sorted(DRILLS))
def test_every_drill_reference_defines_its_graded_names(drill_id):
    drill = DRILLS[drill_id]
    module = importlib.import_module(drill.module)
    missing = [name for name in drill.graded if not hasattr(module, name)]
    assert not missing, f"{drill.module} lacks {missing}"


@pytest.mark.parametrize("drill_id", sorted(DRILLS))
def test_every_drill_asks_three_probes(drill_id):
    probes = DRILLS[drill_id].probes
    assert len(probes) == 3 and all(p.strip().endswith("?") for p in probes), probes


DEBUG_CASES = sorted(d.id for d in DRILLS.values() if d.kind == "debug")


@pytest.mark.parametrize("drill_id", DEBUG_CASES)
def test_a_debug_cases_supplied_test_fails_on_its_start_file_and_passes_on_the_reference(
    drill_id,
):
    drill = DRILLS[drill_id]
    start, test_file = drill.starting_artifact(), drill.failing_test()
    assert start is not None and start.is_file(), f"{drill_id}: no starting artifact"
    assert test_file is not None and test_file.is_file(), f"{drill_id}: no failing test"

    on_start = supplied_test_outcomes(test_file, drill.variable, str(start))
    on_reference = supplied_test_outcomes(test_file, drill.variable, drill.module)

    assert len(on_start) >= 4
    assert not any(on_start.values()), f"passes on the broken start file: {on_start}"
    assert all(on_reference.values()), f"fails on the reference: {on_reference}"


def test_a_transfer_case_names_its_canonical_owner():
    # A drill, or a model build the kit names as the owner (M01-M10: PT02's M04).
    for drill in DRILLS.values():
        if drill.kind == "transfer":
            build = re.fullmatch(r"M(0[1-9]|10)", drill.owner) is not None
            assert drill.owner in DRILLS or build, f"{drill.id}: owner {drill.owner!r} is unknown"


@pytest.mark.parametrize("spelling", ["p19", "P19", " p19 "])
def test_a_drill_is_found_in_any_case(spelling):
    assert find(spelling).id == "P19"


def test_an_unknown_drill_id_is_rejected_by_name():
    with pytest.raises(ValueError, match="drill_id"):
        find("P99")


@pytest.mark.parametrize("drill_id", sorted(DRILLS))
def test_the_readme_has_each_drills_section_with_its_catalogue_probes(drill_id):
    readme = TESTS.parent / "README.md"
    if not readme.is_file():
        pytest.skip("run from a repository checkout")
    text = readme.read_text(encoding="utf-8")
    drill = DRILLS[drill_id]
    assert f"### {drill.id} {drill.title} ({drill.difficulty}, {drill.minutes} min" in text
    for probe in drill.probes:
        assert probe in text, f"{drill_id}: README lacks the probe {probe!r}"
