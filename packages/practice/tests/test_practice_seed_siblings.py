"""A seed-shaped module graded alone: its sibling imports reach this project's references.

The seed's labs import each other by plain name (`from tiny_gpt import FeedForward,
GPTConfig`). A learner practising one mechanism writes only that file; each of the
seed's six modules (integration_tests/faithful/seed_labs), alone in a fresh practice
home and alone in a folder under `grade`, must be graded, not refused for a sibling
it never had to write. Here because it needs the runtime packages installed; each
graded case is one grader run (about 2 s on an idle machine).
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from gptlab_testkit import VARIABLES
from gptlab_testkit.commands.grade import main as grade
from gptlab_testkit.loading.attempts import load_attempt_file
from gptlab_testkit.loading.cannot_grade import hint_for
from gptlab_testkit.loading.seed_modules import SEED_MODULES, seed_module

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice")]

ROOT = Path(__file__).resolve().parents[3]
SEED_LABS = ROOT / "integration_tests" / "faithful" / "seed_labs"
Practise = Any  # the conftest's runner: practise(*argv) -> Run(code, out, err)

# practice mechanism -> the seed's file for it
MECHANISMS = {
    "tinygpt": "tiny_gpt",
    "cache_aware_lm": "cache_aware_lm",
    "kv_cache": "kv_cache",
    "prefix_cache": "prefix_cache",
    "chunked_prefill": "chunked_prefill",
    "speculative": "speculative_decoding",
}


def seed_imports() -> list[tuple[str, str, str]]:
    """(file, seed module, name) for every `from <seed module> import name` in seed_labs."""
    found = []
    for path in sorted(SEED_LABS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in SEED_MODULES:
                found += [(path.name, node.module, alias.name) for alias in node.names]
    return found


def test_the_seed_labs_import_a_sibling() -> None:
    """The premise: at least one seed file needs a sibling (else the cases below prove little)."""
    assert ("cache_aware_lm.py", "tiny_gpt", "FeedForward") in seed_imports()


@pytest.mark.parametrize(("file", "module", "name"), seed_imports())
def test_each_stand_in_has_what_the_seed_files_import(file: str, module: str, name: str) -> None:
    assert hasattr(seed_module(module), name), f"{file}: from {module} import {name}"


@pytest.mark.parametrize(
    ("module", "name", "reference"),
    [
        ("tiny_gpt", "FeedForward", "tinygpt.blocks"),
        ("tiny_gpt", "GPTConfig", "tinygpt.config"),
        ("cache_aware_lm", "CacheAwareCausalLMOutput", "cache_aware_lm.output"),
        ("cache_aware_lm", "CacheAwareCausalLM", "cache_aware_lm.model"),
        ("speculative_decoding", "speculative_generate", "speculative.generate"),
        ("kv_cache", "KVCache", "kv_cache.cache"),
    ],
)
def test_a_lone_attempt_imports_the_seeds_names_from_the_references(
    tmp_path: Path, module: str, name: str, reference: str
) -> None:
    """The names the seed's modules export, from a folder holding no such sibling."""
    attempt = tmp_path / "lone_attempt.py"
    attempt.write_text(f"from {module} import {name}\nGOT = {name}\n", encoding="utf-8")
    got = load_attempt_file(attempt).GOT
    assert got.__module__ == reference


def test_a_sibling_in_the_folder_wins_over_the_reference(tmp_path: Path) -> None:
    (tmp_path / "tiny_gpt_attempt.py").write_text("WHO = 'mine'\n", encoding="utf-8")
    attempt = tmp_path / "cache_aware_lm_attempt.py"
    attempt.write_text("from tiny_gpt import WHO\n", encoding="utf-8")
    assert load_attempt_file(attempt).WHO == "mine"


def test_a_name_the_reference_lacks_names_the_stand_in_and_the_way_out(tmp_path: Path) -> None:
    from gptlab_testkit import CandidateError, load_candidate

    attempt = tmp_path / "cache_aware_lm_attempt.py"
    attempt.write_text("from tiny_gpt import NoSuchBlock\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CACHE_AWARE_LM_MODULE", str(attempt))
        load_candidate.cache_clear()
        with pytest.raises(CandidateError) as raised:
            load_candidate("CACHE_AWARE_LM_MODULE")
    load_candidate.cache_clear()
    message = str(raised.value)
    assert "'NoSuchBlock'" in message and "cache_aware_lm_attempt.py:1" in message
    assert "tinygpt stood in for the seed's tiny_gpt" in message
    assert "practice start tinygpt" in hint_for(message)


@pytest.mark.parametrize("mechanism", sorted(MECHANISMS))
def test_each_seed_module_alone_in_a_fresh_home_passes_stage_1(
    practise: Practise, home: Path, mechanism: str
) -> None:
    assert practise("start", mechanism).code == 0
    stem = MECHANISMS[mechanism]
    assert sorted(path.name for path in home.glob("*.py")) == [f"{stem}_attempt.py"]
    shutil.copyfile(SEED_LABS / f"{stem}.py", home / f"{stem}_attempt.py")
    checked = practise("check")
    assert checked.code == 0, checked.out
    assert f"{mechanism} stage 1/" in checked.out and ": PASS" in checked.out


@pytest.mark.parametrize("stem", sorted(MECHANISMS.values()))
def test_each_seed_module_alone_in_a_folder_is_graded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], stem: str
) -> None:
    folder = tmp_path / "submission"
    folder.mkdir()
    shutil.copyfile(SEED_LABS / f"{stem}.py", folder / f"{stem}.py")
    for variable in VARIABLES:  # grade sets the folder's variables: undone after the test
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(ROOT)
    report = tmp_path / "results.json"
    code = grade([str(folder), "--workers", "1", "--json", str(report)])
    assert code == 0, capsys.readouterr().err
    tests = json.loads(report.read_text())["tests"]
    assert tests and all(test["outcome"] != "failed" for test in tests)


# A cause the check must name, what the attempt holds, words of the fitting hint.
UNGRADABLE = {
    "syntax error": ("KVCache = 1\ndef append_kv_cache(:\n", "line 2", "fix that line"),
    "missing module": ("from kv_helpers import KVCache\n", "'kv_helpers'", "beside the attempt"),
    "missing graded name": ("KVCache = 1\n", "'append_kv_cache'", "a stub until its stage"),
}


@pytest.mark.parametrize("cause", UNGRADABLE)
def test_cannot_be_graded_names_the_cause_then_a_hint_that_fits(
    practise: Practise, home: Path, cause: str
) -> None:
    source, named, advice = UNGRADABLE[cause]
    assert practise("start", "kv_cache").code == 0
    (home / "kv_cache_attempt.py").write_text(source, encoding="utf-8")
    checked = practise("check")
    assert checked.code == 1
    lines = checked.out.splitlines()
    reason = next(i for i, line in enumerate(lines) if "cannot be graded" in line)
    assert named in lines[reason] and advice in lines[reason + 1]
    others = {hint for _, _, hint in UNGRADABLE.values()} - {advice}
    assert not any(hint in checked.out for hint in others)
