"""A drill's clause mutants are graded again only when what decides them changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from gptlab_testkit.known_bad import clause_digest, fresh_clause_drills

pytestmark = [pytest.mark.owner("grading"), pytest.mark.extension]


def drill_package(root: Path) -> Path:
    """A drills-shaped package: a reference, a suite and a clause-mutant file for p99."""
    (root / "src" / "gptlab_drills").mkdir(parents=True)
    (root / "src" / "gptlab_drills" / "p99.py").write_text("def f(x):\n    return x\n")
    (root / "tests" / "p99").mkdir(parents=True)
    (root / "tests" / "p99" / "test_p99.py").write_text("def test_f():\n    pass\n")
    folder = root / "clause_mutants"
    folder.mkdir()
    (folder / "p99.toml").write_text('[[mutant]]\nclause = "P99.1"\n')
    return folder


@pytest.mark.parametrize(
    "edited", ["clause_mutants/p99.toml", "src/gptlab_drills/p99.py", "tests/p99/test_p99.py"]
)
def test_a_stamp_goes_stale_when_the_mutants_the_reference_or_the_suite_change(tmp_path, edited):
    folder = drill_package(tmp_path)
    (folder / "p99.stamp").write_text(clause_digest(folder, "p99") + "\n")
    assert fresh_clause_drills(folder) == {"p99"}

    path = tmp_path / edited
    path.write_text(path.read_text() + "# edited\n")

    assert fresh_clause_drills(folder) == set()


def test_a_drill_without_a_stamp_is_not_fresh(tmp_path):
    folder = drill_package(tmp_path)

    assert fresh_clause_drills(folder) == set()
