"""The grading machinery itself: candidate loading, routing, scorecards, the ladder's manifest."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from gptlab_testkit import OWNERS, CandidateError, load_candidate
from gptlab_testkit.audit.known_bad import own_suite_first, read_known_bad, reference_shares
from gptlab_testkit.commands.grade import UsageError, parse_assignments
from gptlab_testkit.running.owners import readme_row

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

LoadAttempt = Callable[[str, str, str], ModuleType]

# The seed's failure-to-owner table, in this project's keys: every row must be routable.
SEED_OWNERS = {
    "registration", "tying", "head_split", "mask_polarity", "eval_dropout", "loss_shift",
    "tokenwise_cache", "rectangular_mask", "cache_immutability", "fixed_capacity_storage",
    "prefix_key", "prefix_lru", "chunked_metadata", "speculative_rollback",
    "sampler_determinism", "eos_context",
}  # fmt: skip


def test_routing_table_covers_the_seed_owners_with_repair_targets() -> None:
    assert set(OWNERS) >= SEED_OWNERS
    for owner in OWNERS.values():
        assert owner.mechanism and owner.repair and owner.package, owner.key


@pytest.fixture
def load_attempt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LoadAttempt:
    """load_attempt(VARIABLE, filename, source): load_candidate on a fresh file, uncached."""

    def load(variable: str, filename: str, source: str) -> ModuleType:
        module = tmp_path / filename
        module.write_text(source)
        monkeypatch.setenv(variable, str(module))
        load_candidate.cache_clear()
        try:
            return load_candidate(variable)
        finally:
            load_candidate.cache_clear()

    return load


def test_candidate_loads_from_a_py_path(load_attempt: LoadAttempt) -> None:
    source = "def chunked_prefill(*args, **kwargs):\n    return 'mine'\n"
    module = load_attempt("CHUNKED_PREFILL_MODULE", "attempt_ok.py", source)
    assert module.chunked_prefill() == "mine"


def test_missing_name_is_one_line_naming_variable_module_and_name(
    load_attempt: LoadAttempt,
) -> None:
    with pytest.raises(CandidateError) as error:
        load_attempt("KV_CACHE_MODULE", "attempt_empty.py", "X = 1\n")
    message = str(error.value)
    assert "\n" not in message
    assert "KV_CACHE_MODULE" in message
    assert "attempt_empty" in message
    assert "'append_kv_cache'" in message and "'KVCache'" in message


def test_import_failure_is_one_line_with_the_cause(
    load_attempt: LoadAttempt,
) -> None:
    source = "import torch\nraise RuntimeError('half-written attempt')\n"
    with pytest.raises(
        CandidateError, match=r"RuntimeError: half-written attempt \(attempt_boom.py:2\)"
    ):
        load_attempt("SPECULATIVE_DECODING_MODULE", "attempt_boom.py", source)


def test_grade_arguments_accept_pairs_and_assignments(tmp_path: Path) -> None:
    attempt = tmp_path / "attempt.py"
    attempt.write_text("")
    # A module name must be importable (checked at once): any installed dotted name is.
    parsed = parse_assignments(["kv_cache", str(attempt), "speculative=json.decoder"])
    assert parsed == {
        "KV_CACHE_MODULE": str(attempt.resolve()),
        "SPECULATIVE_DECODING_MODULE": "json.decoder",
    }
    assert parse_assignments([f"TINY_GPT_MODULE={attempt}"]) == {
        "TINY_GPT_MODULE": str(attempt.resolve())
    }


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["kv_cach", "a.py"], "unknown package 'kv_cach'"),
        (["kv_cache"], "missing the candidate path"),
        (["kv_cache=/no/such/attempt.py"], "candidate file not found"),
    ],
)
def test_grade_arguments_reject_mistakes(arguments: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_assignments(arguments)


def test_known_bad_manifest_is_read_without_importing(tmp_path: Path) -> None:
    path = tmp_path / "bad_example.py"
    path.write_text(
        '"""Loss computed without the shift.\n\nMore words."""\n'
        'VARIABLE = "TINY_GPT_MODULE"\nEXPECTED_OWNER = "loss_shift"\nraise SystemExit\n'
    )
    bad = read_known_bad(path)
    assert (bad.mistake, bad.variable, bad.expected_owner) == (
        "Loss computed without the shift.", "TINY_GPT_MODULE", "loss_shift",
    )  # fmt: skip
    assert bad.suite == Path("packages/tinygpt/tests")


def test_known_bad_manifest_rejects_an_unknown_owner(tmp_path: Path) -> None:
    path = tmp_path / "bad_example.py"
    path.write_text('"""x"""\nVARIABLE = "TINY_GPT_MODULE"\nEXPECTED_OWNER = "nobody"\n')
    with pytest.raises(ValueError, match="not a routing.toml key"):
        read_known_bad(path)


def test_known_bad_runs_the_candidates_own_suite_first(tmp_path: Path) -> None:
    path = tmp_path / "bad_example.py"
    path.write_text('"""x"""\nVARIABLE = "KV_CACHE_MODULE"\nEXPECTED_OWNER = "loss_shift"\n')
    files = [
        "/repo/packages/cache_aware_lm/tests/test_cache_aware_lm_serving.py",
        "/repo/packages/kv_cache/tests/test_kv_cache_storage.py",
        "/repo/integration_tests/test_slice.py",
        "/repo/packages/kv_cache/tests/test_kv_cache_validation.py",
    ]
    assert own_suite_first(files, read_known_bad(path)) == [files[1], files[3], files[0], files[2]]


def test_reference_checks_run_each_catching_function_with_all_its_parameters() -> None:
    caught = {
        "packages/a/tests/test_x.py::test_one[candidate-2]",
        "packages/a/tests/test_x.py::test_one[candidate-12]",
        "packages/a/tests/test_x.py::test_two",
        "packages/b/tests/test_y.py::TestGroup::test_three[row 1]",
        "integration_tests/test_z.py::test_four",
    }
    shares = reference_shares(caught, jobs=2)
    assert len(shares) == 2
    assert sorted(test for share in shares for test in share) == [
        "integration_tests/test_z.py::test_four",
        "packages/a/tests/test_x.py::test_one",
        "packages/a/tests/test_x.py::test_two",
        "packages/b/tests/test_y.py::TestGroup::test_three",
    ]
    # A file's tests stay in one share: its module fixtures are set up once.
    assert any({"packages/a/tests/test_x.py::test_one", "packages/a/tests/test_x.py::test_two"}
               <= set(share) for share in shares)  # fmt: skip
    assert reference_shares(set(), jobs=2) == []


def test_readme_routing_table_matches_routing_toml() -> None:
    readme = Path(__file__).resolve().parents[3] / "README.md"
    if not readme.is_file():
        pytest.skip("run from a repository checkout")
    text = readme.read_text(encoding="utf-8")
    for owner in OWNERS.values():
        if owner.package == "drills":
            continue  # listed in the drills' README; the mechanisms' rows name them
        assert readme_row(owner) in text, f"README routing table is stale for {owner.key}"


def _write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, source in files.items():
        (folder / name).write_text(source)
    return folder


def test_folder_maps_seed_names_preferring_attempts(tmp_path: Path) -> None:
    from gptlab_testkit.candidates import folder_assignments

    folder = _write(
        tmp_path / "labs",
        {
            "tiny_gpt.py": "",
            "tiny_gpt_attempt.py": "",
            "cache_aware_lm.py": "",
            "speculative.py": "",
            "notes.py": "",
        },
    )
    assert folder_assignments(folder) == {
        "TINY_GPT_MODULE": folder / "tiny_gpt_attempt.py",
        "CACHE_AWARE_LM_MODULE": folder / "cache_aware_lm.py",
        "SPECULATIVE_DECODING_MODULE": folder / "speculative.py",
    }
    assignments = parse_assignments([str(folder), f"cache_aware_lm={folder / 'notes.py'}"])
    assert assignments["TINY_GPT_MODULE"] == str(folder / "tiny_gpt_attempt.py")
    assert assignments["CACHE_AWARE_LM_MODULE"] == str(folder / "notes.py")
    with pytest.raises(UsageError, match="no module named like the seed"):
        parse_assignments([str(_write(tmp_path / "empty", {"helpers.py": ""}))])
