"""examples/gradescope/README.md's "try one submission locally" works as written.

The command is `nox -s grade -- ARGS`; nox's `grade` session runs `python -m
gptlab_testkit.grade ARGS` in a venv holding the graded packages (checked in noxfile.py).
This interpreter holds them, so the test runs exactly that, from the repository root.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from gptlab_testkit.candidates import VARIABLES

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

REPO = Path(__file__).resolve().parents[3]
README = REPO / "examples" / "gradescope" / "README.md"
SESSION_RUNS = 'session.run("python", "-m", "gptlab_testkit.grade", *session.posargs)'


def readme_command() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("Try one submission locally", 1)[1]
    block = re.search(r"```bash\n(.*?)\n```", section, re.DOTALL)
    assert block, "the local try has a bash block"
    return shlex.split(block.group(1))


def test_the_readme_names_the_grade_session_and_the_session_runs_grade() -> None:
    command = readme_command()
    assert command[:4] == ["nox", "-s", "grade", "--"], command
    noxfile = (REPO / "noxfile.py").read_text(encoding="utf-8")
    grade_session = noxfile.split("def grade(session", 1)[1].split("\n@nox.session", 1)[0]
    assert SESSION_RUNS in grade_session


def test_the_local_try_writes_gradescope_results(tmp_path: Path) -> None:
    arguments = readme_command()[4:]
    results = tmp_path / "results.json"
    arguments = [str(results) if a == "/tmp/results.json" else a for a in arguments]
    assert str(results) in arguments, "the command writes /tmp/results.json"
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}  # the caller's swaps
    run = subprocess.run(
        [sys.executable, "-m", "gptlab_testkit.grade", *arguments, "--workers", "1"],
        cwd=REPO,
        env={**env, "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr  # a one-bug submission fails
    payload = json.loads(results.read_text())
    assert payload["tests"] and payload["score"] > 0, payload.get("output")
    failed = [test for test in payload["tests"] if test["score"] < test["max_score"]]
    assert any("fixed_capacity_storage" in test["name"] for test in failed), payload["output"]
