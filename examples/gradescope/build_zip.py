"""Build the autograder zip Gradescope takes: `nox -s gradescope -- [options]`.

    python examples/gradescope/build_zip.py [--out ZIP] [--points N]
        [--visibility OWNER_OR_PACKAGE=VISIBILITY ...]

The zip holds, at its root, Gradescope's two entry files (`setup.sh`, `run_autograder`),
`gradescope_options` (the grade options chosen here, one a line) and the parts of this
repository grading needs: the graded packages with their tests, `integration_tests/` and
the workspace `pyproject.toml` (pytest's settings). Gradescope unpacks it in
/autograder/source.

  --out ZIP          where to write it (default dist/gradescope-autograder.zip)
  --points N         the assignment's points: the scores are scaled so the maximum is N
  --visibility K=V   tests of owner or package K are shown to students: visible, hidden,
                     after_due_date or after_published (repeatable)
"""

from __future__ import annotations

import argparse
import os
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
ENTRY_FILES = ("setup.sh", "run_autograder")
# Not graded: the practice tool, and the trained pair (its weights are most of the repository).
LEFT_OUT_PACKAGES = {"practice", "stdlib_pair"}
SKIPPED = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis"}
SKIPPED |= {"build", "dist", ".nox", ".venv"}


def _files(folder: Path) -> Iterator[Path]:
    for directory, subfolders, names in os.walk(folder):
        subfolders[:] = sorted(
            d for d in subfolders if d not in SKIPPED and not d.endswith(".egg-info")
        )
        for name in sorted(names):
            if not name.endswith((".pyc", ".pyo")):
                yield Path(directory, name)


def source_files(root: Path = ROOT) -> Iterator[Path]:
    """The repository files the autograder needs, relative paths from `root`."""
    yield Path("pyproject.toml")
    for path in _files(root / "integration_tests"):
        yield path.relative_to(root)
    for package in sorted((root / "packages").iterdir()):
        if package.is_dir() and package.name not in LEFT_OUT_PACKAGES:
            for path in _files(package):
                yield path.relative_to(root)


def options_lines(points: float | None, visibility: list[str]) -> list[str]:
    """grade's options for the assignment, checked now (a typo must not reach Gradescope)."""
    from gptlab_testkit.commands.gradescope import gradescope_keys, parse_visibility

    if points is not None and not 0 < points < float("inf"):
        raise ValueError(f"--points must be a positive number, got {points:g}")
    chosen = parse_visibility(visibility, gradescope_keys(), option="--visibility")
    lines = [f"--gradescope-points={points:g}"] if points is not None else []
    return lines + [f"--gradescope-visibility={key}={value}" for key, value in chosen.items()]


def _add(archive: zipfile.ZipFile, name: str, data: bytes, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))  # same inputs, same zip
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (0o100755 if executable else 0o100644) << 16
    archive.writestr(info, data)


def build(out: Path, points: float | None = None, visibility: list[str] | None = None) -> int:
    """Write the zip; return how many files it holds."""
    options = options_lines(points, visibility or [])
    out.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with zipfile.ZipFile(out, "w") as archive:
        for name in ENTRY_FILES:
            _add(archive, name, (HERE / name).read_bytes(), executable=True)
        _add(archive, "gradescope_options", "".join(f"{line}\n" for line in options).encode())
        for relative in source_files():
            executable = os.access(ROOT / relative, os.X_OK)
            _add(archive, relative.as_posix(), (ROOT / relative).read_bytes(), executable)
            count += 1
    return count + len(ENTRY_FILES) + 1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist" / "gradescope-autograder.zip")
    parser.add_argument("--points", type=float)
    parser.add_argument("--visibility", action="append", default=[])
    options = parser.parse_args(argv)
    try:
        count = build(options.out, options.points, options.visibility)
    except ValueError as error:
        print(f"build_zip: {error}", file=sys.stderr)
        return 2
    size = options.out.stat().st_size / 1e6
    print(f"{options.out}: {count} files, {size:.1f} MB: upload it as the autograder zip")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
