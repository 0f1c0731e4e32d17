"""Tracing a package's README clauses to its tests, both ways (`gptlab_testkit.clauses`).

Each case writes a small package (a README and a tests folder) and asks the two
assertions the model builds' clause tests call: a clean package passes, and each way a
suite can drift from its README (a graded clause without a test, a test naming a clause
that does not exist, a contract test naming none, an extension test naming a graded
clause, an extension clause without a test) is caught and named.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gptlab_testkit.clauses import (
    assert_clause_counts,
    assert_contract_traced,
    assert_extensions_traced,
    contract_tests,
    is_contract_file,
)

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

README = """# M99

- **M99.1** (semantics) the first rule.
- **M99.2** (rejection) the second rule.
- **M99.3** (not graded) a rule no test reads.
- **M99.4** (extension) a rule this project adds.
"""

CONTRACT = """import pytest

pytestmark = [pytest.mark.contract, pytest.mark.owner("m99")]


@pytest.mark.clause("M99.1")
def test_first():
    pass


class TestSecond:
    @pytest.mark.clause("M99.2")
    def test_second(self):
        pass
"""

EXTENSION = """import pytest

pytestmark = [pytest.mark.extension, pytest.mark.owner("m99")]


@pytest.mark.clause("M99.4")
def test_added():
    pass
"""


def package(tmp_path: Path, *, readme: str = README, **files: str) -> tuple[Path, Path]:
    """(README, tests folder) of a package with the clean suite, ``files`` replacing or
    adding test files by name."""
    tests = tmp_path / "tests"
    tests.mkdir(parents=True)
    (tmp_path / "README.md").write_text(readme, encoding="utf-8")
    suite = {"test_contract.py": CONTRACT, "test_extension.py": EXTENSION, **files}
    for name, text in suite.items():
        (tests / name).write_text(text, encoding="utf-8")
    return tmp_path / "README.md", tests


def test_a_traced_package_passes_both(tmp_path):
    readme, tests = package(tmp_path)

    assert_contract_traced(readme, tests, "M99", at_least=2)
    assert_extensions_traced(readme, tests, "M99")
    assert [test.name for test in contract_tests(tests)] == ["test_first", "test_second"]


def test_a_contract_file_is_read_from_its_module_marks(tmp_path):
    _, tests = package(tmp_path)

    assert is_contract_file(tests / "test_contract.py")
    assert not is_contract_file(tests / "test_extension.py")


def test_a_graded_clause_without_a_test_is_caught(tmp_path):
    readme, tests = package(tmp_path, readme=README + "- **M99.5** (shape) an untested rule.\n")

    with pytest.raises(AssertionError, match=r"M99\.5 \(shape\) has no test"):
        assert_contract_traced(readme, tests, "M99", at_least=1)


def test_a_test_naming_a_missing_clause_is_caught(tmp_path):
    stray = CONTRACT.replace('clause("M99.1")', 'clause("M99.1", "M99.9")')
    readme, tests = package(tmp_path, **{"test_contract.py": stray})

    with pytest.raises(AssertionError, match=r"test_first names M99\.9: no such clause"):
        assert_contract_traced(readme, tests, "M99", at_least=1)


def test_a_contract_test_naming_no_clause_or_an_extension_clause_is_caught(tmp_path):
    bare = CONTRACT.replace('@pytest.mark.clause("M99.1")\n', "")
    readme, tests = package(tmp_path, **{"test_contract.py": bare})
    with pytest.raises(AssertionError, match="test_first names no clause"):
        assert_contract_traced(readme, tests, "M99", at_least=1)

    added = CONTRACT.replace('clause("M99.1")', 'clause("M99.1", "M99.4")')
    readme, tests = package(tmp_path / "added", **{"test_contract.py": added})
    with pytest.raises(AssertionError, match=r"test_first names M99\.4: no such clause"):
        assert_contract_traced(readme, tests, "M99", at_least=1)


def test_too_few_contract_tests_is_caught(tmp_path):
    readme, tests = package(tmp_path)

    with pytest.raises(AssertionError, match="2 contract tests found, want at least 3"):
        assert_contract_traced(readme, tests, "M99", at_least=3)


def test_an_extension_test_naming_a_graded_clause_is_caught(tmp_path):
    graded = EXTENSION.replace('clause("M99.4")', 'clause("M99.4", "M99.1")')
    readme, tests = package(tmp_path, **{"test_extension.py": graded})

    with pytest.raises(AssertionError, match=r"test_added names M99\.1: no such extension"):
        assert_extensions_traced(readme, tests, "M99")


def test_an_extension_clause_without_a_test_is_caught(tmp_path):
    extra = README + "- **M99.5** (extension) another added rule.\n"
    readme, tests = package(tmp_path, readme=extra)

    with pytest.raises(AssertionError, match=r"M99\.5 \(extension\) has no extension test"):
        assert_extensions_traced(readme, tests, "M99")


def test_a_suite_without_extension_tests_is_caught(tmp_path):
    readme, tests = package(tmp_path)
    (tests / "test_extension.py").unlink()

    with pytest.raises(AssertionError, match="no extension test found"):
        assert_extensions_traced(readme, tests, "M99")


def test_a_readme_below_its_clause_floor_is_caught(tmp_path):
    readme, _ = package(tmp_path)
    assert_clause_counts(readme, "M99", at_least=4, graded=2)

    with pytest.raises(AssertionError, match=r"4 clauses \(2 graded\), want at least 5"):
        assert_clause_counts(readme, "M99", at_least=5, graded=2)
    with pytest.raises(AssertionError, match=r"want at least 4 \(3 graded\)"):
        assert_clause_counts(readme, "M99", at_least=4, graded=3)
