"""Which gptlab checkout grade runs: its suites are `packages/*/tests` and `integration_tests`.

The wheels ship no tests, so grading needs a checkout: `--root`, else `$GPTLAB_ROOT`, else the
first one above the working directory, else the one this package is installed from (an
editable install, as the dev venv and `pip install -e packages/testkit` make).
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT_VARIABLE = "GPTLAB_ROOT"


class CheckoutError(Exception):
    """No checkout found (the one-line message says what to do)."""


def is_checkout(folder: Path) -> bool:
    return (folder / "packages" / "testkit" / "pyproject.toml").is_file()


def find_checkout(option: Path | None = None) -> Path:
    """The checkout to grade from (see the module docstring), or CheckoutError."""
    given = option or (Path(os.environ[ROOT_VARIABLE]) if os.environ.get(ROOT_VARIABLE) else None)
    if given is not None:
        root = given.expanduser().resolve()
        if not is_checkout(root):
            raise CheckoutError(
                f"{root} is not a gptlab checkout (no packages/testkit/pyproject.toml there)"
            )
        return root
    for start in (Path.cwd().resolve(), Path(__file__).resolve().parent):
        for folder in (start, *start.parents):
            if is_checkout(folder):
                return folder
    raise CheckoutError(
        f"no gptlab checkout above {Path.cwd()} (grading runs its packages/*/tests): run from "
        f"inside the checkout, or pass --root PATH (or set {ROOT_VARIABLE})"
    )
