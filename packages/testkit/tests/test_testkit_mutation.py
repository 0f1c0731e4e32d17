"""The mutation runner: diff parsing, the accepted file, accounting, and one real mutmut run
on a throwaway package with a known killed and a known surviving mutant."""

from __future__ import annotations

import textwrap
import tomllib
from pathlib import Path

import pytest

from gptlab_testkit.audit import mutation
from gptlab_testkit.audit.mutation import Accepted, Mutant, Target

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

ROOT = Path(__file__).resolve().parents[3]

DIFF = """\
--- src/gptlab_drills/p05.py
+++ src/gptlab_drills/p05.py
@@ -1,4 +1,4 @@
 def _check(size):
-    if size < 1:
+    if size < 2:
         raise ValueError("size")
"""


def mutant(name: str = "m.x_f__mutmut_1", change: str = "-    a\n+    b", status="survived"):
    return Mutant(name=name, module="m", function="f", status=status, change=change)


def entry(change: str = "-    a\n+    b", **fields) -> Accepted:
    values = {"function": "f", "kind": "equivalent", "reason": "same value"} | fields
    return Accepted(change=change, **values)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_changed_lines_keep_only_the_edit():
    assert mutation.changed_lines(DIFF) == "-    if size < 1:\n+    if size < 2:"


def test_an_entry_matches_on_function_and_change_whatever_the_mutant_number():
    accepted = [entry()]
    renumbered = [mutant("m.x_f__mutmut_7"), mutant("m.x_f__mutmut_8", "-    a\n+    c")]
    verdict = mutation.account("t", renumbered, accepted)
    assert [m.name for m in verdict.unaccepted] == ["m.x_f__mutmut_8"]
    assert verdict.accepted == 1 and not verdict.stale and not verdict.passed


def test_an_entry_for_a_killed_mutant_is_stale():
    verdict = mutation.account("t", [mutant(status="killed")], [entry()])
    assert verdict.killed == 1 and verdict.stale == [entry()] and not verdict.passed


def test_a_module_given_must_match():
    verdict = mutation.account("t", [mutant()], [entry(module="other")])
    assert len(verdict.unaccepted) == 1 and len(verdict.stale) == 1


def test_a_stub_pastes_back_as_a_matching_entry(tmp_path):
    survivor = mutant(change='-    raise ValueError(f"{x!r}")\n+    raise ValueError(None)')
    text = mutation.stub(survivor, with_module=True)
    text = text.replace('class = "?"', 'class = "equivalent"').replace('"?"', '"message only"')
    entries = mutation.load_accepted(write(tmp_path / "a.toml", text))
    assert entries[0].matches(survivor)


@pytest.mark.parametrize(
    ("fields", "fault"),
    [
        ('class = "fine"\nreason = "r"', "class 'fine'"),
        ('class = "equivalent"', "missing reason"),
    ],
)
def test_a_malformed_entry_is_refused(tmp_path, fields, fault):
    path = write(tmp_path / "a.toml", f'[[survivor]]\nfunction = "f"\nchange = "-a"\n{fields}\n')
    with pytest.raises(ValueError, match=fault):
        mutation.load_accepted(path)


def test_targets_cover_every_drill_modern_lm_and_the_six():
    targets = mutation.all_targets(ROOT)
    drills = {p.name for p in (ROOT / "packages" / "drills" / "tests").glob("p*") if p.is_dir()}
    assert drills <= targets.keys() and set(mutation.PACKAGES) <= targets.keys()
    assert [t.name for t in mutation.resolve(["P05"], ROOT)] == ["p05"]
    assert targets["p05"].modules == ("src/gptlab_drills/p05.py",)
    with pytest.raises(ValueError, match="p99"):
        mutation.resolve(["p99"], ROOT)


def test_the_table_names_every_column():
    row = {"mutants": 4, "killed": 3, "survived": 1, "accepted": 1, "score": 0.75, "seconds": 2}
    assert "| t | 4 | 3 | 1 | 1 | 75% | 2 |" in mutation.table({"t": row})


TOY_MODULE = """\
def double(x):
    return x * 2


def is_positive(x):
    return x > 0
"""

# double is pinned down exactly; is_positive never meets 0 or 1 (its `>= 0`, `> 1` live).
TOY_TESTS = """\
import pytest

from toy.core import double, is_positive

pytestmark = [pytest.mark.contract, pytest.mark.owner("grading")]


def test_double():
    assert double(3) == 6


def test_sign():
    assert is_positive(5) and not is_positive(-5)
"""


def test_a_real_run_kills_some_and_accounts_for_the_rest(tmp_path):
    # Laid out like the repository: its pytest settings (the gptlab plugin on) apply.
    (tmp_path / "pyproject.toml").write_bytes((ROOT / "pyproject.toml").read_bytes())
    package = tmp_path / "packages" / "toy"
    write(package / "src" / "toy" / "__init__.py", "")
    write(package / "src" / "toy" / "core.py", TOY_MODULE)
    write(package / "tests" / "test_toy.py", TOY_TESTS)
    accepted = write(
        package / "mutation.toml",
        """\
        [[survivor]]
        function = "is_positive"
        change = "-    return x > 0\\n+    return x >= 0"
        class = "outside the contract"
        reason = "zero is never asked"
        """,
    )
    target = Target("toy", package, ("src/toy/core.py",), "tests", accepted)
    verdict = mutation.run_target(target, jobs=1)
    assert not [m for m in verdict.survivors if m.function == "double"]
    assert verdict.killed >= 2 and verdict.accepted == 1
    unaccepted = {m.change for m in verdict.unaccepted}
    assert unaccepted == {"-    return x > 0\n+    return x > 1"}
    assert not verdict.stale and not verdict.passed
    stubbed = tomllib.loads(mutation.stub(verdict.unaccepted[0]))["survivor"][0]
    assert stubbed["function"] == "is_positive"
