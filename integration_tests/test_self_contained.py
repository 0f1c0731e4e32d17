"""The repository stands alone: what it ships names only files it holds (or public URLs).

Every text file of the tree (`git ls-files`: tracked, plus new files not ignored) and every
attempt header `gptlab-practice start` writes is read for: a relative link or `../` path
that leaves the tree or names nothing; a document (`*.md`) or a repository path
(`packages/...`, `docs/...`) that does not exist; the names of the private notes this
project was built from. A learner with a clone has only the clone.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

pytestmark = [pytest.mark.extension, pytest.mark.owner("package_isolation")]

ROOT = Path(__file__).resolve().parents[1]
# Spelled in pieces, so that a search of the tree for these names finds none, this file too.
FORBIDDEN = tuple(
    "".join(parts)
    for parts in (
        ("CONTRACTS", ".md"),
        ("DRILLS", ".md"),
        ("KIT", ".md"),
        ("STYLE", ".md"),
        ("..", "/shared"),
        ("seed/", "gpt-lab"),
    )
)
TOP_FOLDERS = ("packages", "integration_tests", "examples", "docs", "bench")
MARKDOWN_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
PARENT_PATH = re.compile(r"(?<![\w./-])((?:\.\./)+[\w./-]*)")
DOCUMENT = re.compile(r"(?<![\w./<{-])([\w./-]*[\w-]\.md)\b")
TREE_PATH = re.compile(rf"(?<![\w./-])((?:{'|'.join(TOP_FOLDERS)})/[\w./-]*)")
PLACEHOLDER = re.compile(r"[<>{}*]|\.\.\.|XX")
# Documents the tools write (not shipped): `grade --submissions`, bench/gpu_graphs.py and
# `nox -s mutation` write these; and the folders a CI job keeps beside its checkout.
GENERATED_DOCUMENTS = {"class.md", "graphs.md", "mutation.md"}
OUTSIDE_BY_DESIGN = {"../attempt", "../results.json", "../grade.json"}  # examples/github
_SKIPPED = {".git", ".nox", ".venv", "__pycache__", "build", "dist", "node_modules"}


def tree_files() -> list[Path]:
    """The repository's files as git sees them (a walk of the tree when git cannot tell)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "-z"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.decode()
        return sorted(ROOT / name for name in listed.split("\0") if name)
    except (OSError, subprocess.CalledProcessError):
        found = []
        for folder, subfolders, names in os.walk(ROOT):
            subfolders[:] = [d for d in subfolders if d not in _SKIPPED and not d.startswith(".")]
            found += [Path(folder, name) for name in names]
        return sorted(found)


FILES = tree_files()
BASENAMES = {path.name for path in FILES}


def _text(path: Path) -> str | None:
    if path.is_symlink() or not path.is_file() or path.stat().st_size > 2_000_000:
        return None
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _inside(target: Path) -> bool:
    resolved = target.resolve()
    return resolved == ROOT or ROOT in resolved.parents


def _exists(name: str, folder: Path) -> bool:
    """A name resolves relative to its file's folder or to the root, inside the tree."""
    clean = name.split("#", 1)[0].rstrip(",:;)")
    if not clean.rstrip("."):
        return True
    return any(_inside(base / clean) and (base / clean).exists() for base in (folder, ROOT))


def anchors(markdown: str) -> set[str]:
    """A page's link targets: its headings as GitHub slugs them, and explicit ids."""
    headings = re.findall(r"^#+ (.+?)\s*$", markdown, re.MULTILINE)
    slugs = {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}
    return slugs | set(re.findall(r"<a (?:id|name)=\"([^\"]+)\"", markdown))


def _anchor_problem(target: str, folder: Path, here: str) -> str | None:
    """Why `page.md#anchor` (or `#anchor` on this page) names no heading, if it does not."""
    page, _, anchor = target.partition("#")
    if not anchor:
        return None
    path = (folder / page) if page else None
    if path is not None and (path.suffix != ".md" or not path.is_file()):
        return None  # a missing page is reported as a link; other files have no anchors
    text = path.read_text(encoding="utf-8") if path is not None else here
    return None if anchor in anchors(text) else f"anchor {target!r} names no heading"


def _ignored_outputs() -> tuple[str, ...]:
    """Folders .gitignore names with a path (bench/out/, grade-results/): tools' outputs."""
    lines = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    return tuple(line.strip("/") for line in lines if line.endswith("/") and "*" not in line)


def _tree_path_exists(path: str, folder: Path) -> bool:
    """A repository path, a prefix of some (`known_bad/bad_tinygpt_`), or a tool's output."""
    clean = path.rstrip(".,:;)")
    if _exists(clean, folder) or clean.startswith(_ignored_outputs()):
        return True
    return any(str(file.relative_to(ROOT)).startswith(clean) for file in FILES)


def problems_in(text: str, folder: Path, markdown: bool) -> list[str]:
    """What in this text points outside the tree or at nothing (empty when all resolves)."""
    found = [f"names {name!r}" for name in FORBIDDEN if name in text]
    if markdown:
        for target in MARKDOWN_LINK.findall(text):
            if re.match(r"[a-z]+:", target):  # a URL
                continue
            if not target.startswith("#") and not _exists(target, folder):
                found.append(f"link {target!r} resolves to nothing in the tree")
            elif problem := _anchor_problem(target, folder, text):
                found.append(problem)
    for path in PARENT_PATH.findall(text):
        if PLACEHOLDER.search(path) or path.rstrip(".,:;)") in OUTSIDE_BY_DESIGN:
            continue
        if not _exists(path, folder):
            found.append(f"path {path!r} leaves the tree or names nothing")
    for name in DOCUMENT.findall(text):
        if PLACEHOLDER.search(name) or name.startswith((".", "/")):
            continue
        basename = name.rsplit("/", 1)[-1]
        if basename in GENERATED_DOCUMENTS:
            continue
        if not (_exists(name, folder) or ("/" not in name and name in BASENAMES)):
            found.append(f"document {name!r} is not in the tree")
    if markdown:  # what a reader is told to open
        for path in TREE_PATH.findall(text):
            if not PLACEHOLDER.search(path) and not _tree_path_exists(path, folder):
                found.append(f"repository path {path!r} does not exist")
    return found


def text_files() -> Iterator[tuple[Path, str]]:
    for path in FILES:
        text = _text(path)
        if text is not None:
            yield path, text


def test_the_tree_holds_every_text_file():
    assert sum(1 for _ in text_files()) > 300, "git ls-files (or the walk) found the tree"


def test_every_shipped_file_names_only_what_the_tree_holds():
    found = [
        f"{path.relative_to(ROOT)}: {problem}"
        for path, text in text_files()
        if path.resolve() != Path(__file__).resolve()
        for problem in problems_in(text, path.parent, path.suffix == ".md")
    ]
    assert not found, "\n".join(found)


def test_the_checks_catch_what_they_describe():
    """Each rule, on text that breaks it and nothing else."""
    folder = ROOT / "packages" / "kv_cache"
    bad = {
        f"see {FORBIDDEN[0]}": "names",
        "[c](../../docs/missing.md)": "link",
        "[c](../../docs/contracts.md#no-such-heading)": "anchor",
        "read ../../../outside/notes.txt first": "leaves the tree",
        "the ladder is in ladder_notes.md": "document",
        "see packages/kv_cache/src/kv_cache/nowhere.py": "repository path",
    }
    for text, kind in bad.items():
        assert any(kind in problem for problem in problems_in(text, folder, True)), text
    good = "[c](../../docs/contracts.md) README.md docs/contracts.md packages/<id>/tests"
    assert problems_in(good, folder, True) == []


def test_every_attempt_header_points_at_the_repositorys_contract():
    sheet = pytest.importorskip("gptlab_practice.sheet")
    from gptlab_practice.stages import units

    headings = {
        "docs/contracts.md": (ROOT / "docs" / "contracts.md").read_text(encoding="utf-8"),
        "packages/drills/README.md": (ROOT / "packages/drills/README.md").read_text("utf-8"),
        "packages/kernels/README.md": (ROOT / "packages/kernels/README.md").read_text("utf-8"),
    }
    for unit in units().values():
        header = sheet.attempt_header(unit, ("name",), 1, datetime(2026, 1, 1))
        assert problems_in(header, ROOT, False) == [], (unit.package, header)
        document = next(name for name in headings if name in header)
        section = re.search(r"section (\w+)", header)
        assert section, header
        heading = re.compile(rf"^#+ .*\b{section.group(1)}\b", re.MULTILINE)
        assert heading.search(headings[document]), (unit.package, section.group(1))
