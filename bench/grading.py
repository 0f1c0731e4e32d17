"""Grading cost: seconds per attempt and per class (a benchmark, never a timed test).

    python -m bench.grading [--only single,folder,class,drills] [--class-size 100] [--jobs 2]

Run from the repository root with warm nox venvs (`nox -s grade` once). Measures,
each as the wall time of the documented command plus the CPU seconds it and its
children used (the machine is shared: CPU seconds are the steadier figure):

- single: `nox -R -s grade -- kv_cache FILE` with a faithful single-file kv_cache;
- folder: `nox -R -s grade -- FOLDER` with the seed-style folder of six modules;
- drills: `nox -s drills` (every drill's suite, goal 60 s), then each drill's contract
  suite warm, forked from one process as `grade -- p19 FILE` runs it (goal 2 s each:
  `bench.drill_suites`);
- class:  `nox -R -s grade -- --submissions DIR --jobs 2 --workers 1` over a class
  generated in a temporary folder from the faithful, known-bad and hostile
  candidates (mostly single files, some folders), every verdict checked against
  the expected one (faithful: pass; known-bad: FAIL on its EXPECTED_OWNER, never on
  a candidate error unless it is a hostile one; SCOPE = "all" candidates break
  only this project's extensions, so they are left out of a contract-graded class).
  Every submission is self-contained: a known-bad candidate built from a faithful
  stranger (`stranger_with(...)` from integration_tests/known_bad/_strangers.py) is
  written out as the stranger's edited source, so it imports alone like a student's.

Writes bench/grading.json and the "Grading cost" section of bench/report.md
(between its markers), with the 1-minute load average before and after each figure.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import importlib.util
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
KNOWN_BAD = ROOT / "integration_tests" / "known_bad"
STRANGERS = KNOWN_BAD / "_strangers.py"
FAITHFUL = ROOT / "integration_tests" / "faithful"
SINGLE = FAITHFUL / "good_kv_cache_index_copy.py"
FOLDER = FAITHFUL / "seed_labs"
OUT_JSON = ROOT / "bench" / "grading.json"
REPORT = ROOT / "bench" / "report.md"
START, END = "<!-- grading:start -->", "<!-- grading:end -->"
# Hand-written notes after this marker (up to END) survive a re-render of the section.
NOTES = "<!-- grading:notes -->"
TARGET_NAMES = {
    "single": "`grade -- kv_cache FILE`",
    "folder": "`grade -- FOLDER` (six modules)",
    "class": "100 submissions, `--jobs 2`",
    "drills": "`nox -s drills` (every drill's suite)",
    "drill": "one drill's contract suite, warm (slowest drill)",
}
# variable -> the file name a submission uses for it (the seed's lab names)
STEMS = {
    "TINY_GPT_MODULE": "tiny_gpt",
    "MODERN_LM_MODULE": "modern_lm",
    "CACHE_AWARE_LM_MODULE": "cache_aware_lm",
    "KV_CACHE_MODULE": "kv_cache",
    "PREFIX_CACHE_MODULE": "prefix_cache",
    "CHUNKED_PREFILL_MODULE": "chunked_prefill",
    "SPECULATIVE_DECODING_MODULE": "speculative_decoding",
    "PAGED_KV_MODULE": "paged_kv",
    "SCHEDULER_MODULE": "scheduler",
}


def _constants(path: Path) -> dict[str, str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                    found[target.id] = node.value.value
    return found


def measure(command: list[str]) -> dict[str, object]:
    """Wall seconds, CPU seconds (this command and its children) and the load around it."""
    load_before = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "command": " ".join(command),
        "returncode": completed.returncode,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "load_before": round(load_before, 1),
        "load_after": round(os.getloadavg()[0], 1),
        "tail": completed.stdout[-1500:] + completed.stderr[-1500:],
        "measured_at": _now(),
    }


def as_submission(source: str, stem: str) -> str:
    """A known-bad file rewritten to live as `<stem>.py` in a student's folder.

    A mutant that imports its reference by the same plain name (`import kv_cache` in a
    file handed in as kv_cache.py) would reach itself, since a folder's plain modules
    come first for a candidate's imports; those imports go through importlib instead
    (which the loader leaves alone), so the submission is the mutant, not an import error.
    """
    tree = ast.parse(source)
    lines = source.splitlines()
    for node in reversed(tree.body):
        code: list[str] = []
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == stem for a in node.names):
            code = [
                f"{(a.asname or a.name.split('.')[0])} = __import__('importlib')"
                f".import_module({(a.name if a.asname else a.name.split('.')[0])!r})"
                for a in node.names
            ]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == stem:
            module = f"__import__('importlib').import_module({node.module!r})"
            code = [f"{a.asname or a.name} = {module}.{a.name}" for a in node.names]
        if code:
            lines[node.lineno - 1 : node.end_lineno] = code
    return "\n".join(lines) + "\n"


def _strangers() -> ModuleType:
    """integration_tests/known_bad/_strangers.py (a helper file, not an installed module)."""
    spec = importlib.util.spec_from_file_location("gptlab_bench_strangers", STRANGERS)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {STRANGERS}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stranger_edit(source: str) -> tuple[str, list[tuple[str, str]]] | None:
    """(stranger stem, text edits) of a candidate made by `stranger_with(...)`, else None."""
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "stranger_with"
        ):
            stem, edits = (ast.literal_eval(argument) for argument in node.args)
            return stem, [(old, new) for old, new in edits]
    return None


def self_contained(path: Path) -> str:
    """A known-bad candidate's source as one file that imports alone.

    A stranger-shaped candidate imports `_strangers`, a helper beside it that a class
    folder does not have: it is written out as the stranger's full source with the same
    text edit applied here (the stranger defines every name the candidate re-exports).
    """
    source = path.read_text(encoding="utf-8")
    edit = stranger_edit(source)
    if edit is None:
        return source
    stem, edits = edit
    header = f"# {path.name}: {stem}.py with its one mistake, written out by bench.grading\n"
    return header + str(_strangers().edited_source(stem, edits))


Expected = dict[str, object]  # {"verdict": "pass"/"FAIL", "owner": str, "hostile": bool}


Source = tuple[str, list[tuple[str, Path]], Expected]  # (label, [(variable, file)], expected)


def _in_class(path: Path, variable: str) -> bool:
    if variable not in STEMS:
        print(f"bench.grading: {path.name} left out of the class ({variable} is not in STEMS)")
    return variable in STEMS


def imports_what_the_judge_refuses(source: str, variable: str) -> bool:
    """Does this file import a package a judged candidate may not (the testkit's mutant
    builder, the reference)? Such a file is one of known_bad's fixtures (trusted there),
    not a student's submission: graded, the judge's worker refuses it at import."""
    from gptlab_testkit.judge.policy import JUDGED, refused_modules

    if variable not in JUDGED:
        return False
    refused = set(refused_modules(variable))
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        else:
            continue
        if any(name.split(".")[0] in refused for name in names):
            return True
    return False


def class_sources(known_bad: list[Path], faithful: list[Path]) -> list[Source]:
    """The single-file submissions a class cycles through, with their expectations.

    Only the mechanisms of STEMS (the seed's labs and this project's runtime): a
    candidate of another variable (a mechanism added since) is left out, and said so;
    so is a known-bad or faithful fixture built from the reference of a judged variable
    (a student's file cannot import the reference: the judge refuses it).
    """
    sources: list[Source] = []
    left_out = []
    for path in known_bad:
        constants = _constants(path)
        if constants.get("SCOPE") == "all" or not _in_class(path, constants["VARIABLE"]):
            continue
        kind = "hostile" if constants.get("RUN") == "isolated" else "bad"
        source = self_contained(path)
        if kind == "bad" and imports_what_the_judge_refuses(source, constants["VARIABLE"]):
            left_out.append(path.stem)
            continue
        want: Expected = {
            "verdict": "FAIL",
            "owner": constants["EXPECTED_OWNER"],
            "hostile": kind == "hostile",
        }
        sources.append((f"{kind}_{path.stem[4:]}", [(constants["VARIABLE"], path)], want))
    for path in faithful:
        variable = _constants(path)["VARIABLE"]
        if not _in_class(path, variable):
            continue
        if imports_what_the_judge_refuses(path.read_text(encoding="utf-8"), variable):
            left_out.append(path.stem)  # a faithful edit of the reference (known_bad trusts it)
            continue
        sources.append((f"good_{path.stem[5:]}", [(variable, path)], {"verdict": "pass"}))
    if left_out:
        print(f"bench.grading: {len(left_out)} fixtures built from a judged variable's "
              "reference left out of the class (not a student's file)")  # fmt: skip
    return sources


def make_class(root: Path, size: int, sources: list[Source] | None = None) -> dict[str, Expected]:
    """`size` submission folders in `root`; returns {name: expected verdict and owner}.

    `sources` defaults to every known-bad and faithful candidate of integration_tests.
    """
    if sources is None:
        sources = class_sources(
            sorted(KNOWN_BAD.glob("bad_*.py")), sorted(FAITHFUL.glob("good_*.py"))
        )
    folder = [(p.stem, p) for p in sorted(FOLDER.glob("*.py"))]
    expected: dict[str, Expected] = {}
    verdict: Expected
    index = 0
    while len(expected) < size:
        if index % 10 == 9:  # every tenth submission: the six-module seed-style folder
            name, verdict = f"{index:03d}_folder_seed_labs", {"verdict": "pass"}
            (root / name).mkdir()
            for stem, path in folder:
                shutil.copy(path, root / name / f"{stem}.py")
        else:
            label, files, verdict = sources[index % len(sources)]
            name = f"{index:03d}_{label}"
            (root / name).mkdir()
            for variable, path in files:
                stem = STEMS[variable]
                text = as_submission(self_contained(path), stem)
                (root / name / f"{stem}.py").write_text(text, encoding="utf-8")
        expected[name] = verdict
        index += 1
    return expected


def bench_drills() -> dict[str, dict[str, object]]:
    """`nox -R -s drills`, then each drill's suite warm (the slowest is the figure)."""
    session = measure(["nox", "-s", "drills"])  # installs this checkout when it changed
    python = ROOT / ".nox" / "drills" / "bin" / "python"
    suites = measure([str(python), "-m", "bench.drill_suites"])
    seconds: dict[str, float] = json.loads(str(suites["tail"]).strip().splitlines()[-1])
    slowest = sorted(seconds.items(), key=lambda item: -item[1])
    ordered = sorted(seconds.values())
    suites.update(
        wall_s=slowest[0][1],
        per_drill_s=seconds,
        median_s=ordered[len(ordered) // 2],
        slowest=[f"{key} {value} s" for key, value in slowest[:4]],
    )
    return {"drills": session, "drill": suites}


def bench_class(size: int, jobs: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="gptlab-class-bench-") as scratch:
        submissions = Path(scratch) / "class"
        submissions.mkdir()
        expected = make_class(submissions, size)
        out = Path(scratch) / "out"
        command = ["nox", "-R", "-s", "grade", "--", "--submissions", str(submissions)]
        command += ["--jobs", str(jobs), "--workers", "1", "--out", str(out)]
        record = measure(command)
        record.update(class_record(expected, out / "class.json"))
        return record


def is_candidate_error(note: str) -> bool:
    return note.startswith("candidate error")


def why_wrong(row: dict[str, object] | None, want: Expected | str) -> str:
    """'' when a submission's grading is as expected, else what differed.

    A known-bad submission must fail on its expected owner (a routed test failure),
    not merely fail: a candidate error (its module did not import, or lacked a name)
    is wrong unless the submission is a hostile one, built to break its grading.
    """
    want = {"verdict": want} if isinstance(want, str) else want  # a hand-made expected.json
    if row is None:
        return "not in class.json"
    note = str(row["note"])
    if is_candidate_error(note) or row["verdict"] == "not graded":  # it did not import
        return "" if want.get("hostile") else note  # a hostile one may break its import
    if row["verdict"] != want["verdict"]:
        return f"verdict {row['verdict']}, expected {want['verdict']}: {note}"
    owner = want.get("owner")
    tests = row["tests"] if isinstance(row["tests"], list) else []
    failed = {test["owner"] for test in tests if test["outcome"] == "failed"}
    if owner and not is_candidate_error(note) and owner not in failed:
        return f"failed on {sorted(failed)}, not on its expected owner {owner}"
    return ""


def class_record(expected: dict[str, Expected], class_json: Path) -> dict[str, object]:
    """Verdicts (and known-bad owners) against the expected ones, and per-submission seconds."""
    payload = json.loads(class_json.read_text())
    rows = {row["name"]: row for row in payload["submissions"]}
    notes = {name: str(row["note"]) for name, row in rows.items()}
    wrong = {
        name: why for name, want in expected.items() if (why := why_wrong(rows.get(name), want))
    }
    seconds = sorted(row["seconds"] for row in payload["submissions"])
    candidate_errors = sorted(n for n, note in notes.items() if is_candidate_error(note))
    return {
        "submissions": len(expected),
        "verdicts_as_expected": len(expected) - len(wrong),
        "wrong": wrong,
        "candidate_errors": candidate_errors,
        "unexpected_candidate_errors": sorted(name for name in candidate_errors if name in wrong),
        "per_submission_median_s": seconds[len(seconds) // 2],
        "per_submission_max_s": seconds[-1],
        "kinds": {
            kind: sum(name.split("_")[1] == kind for name in expected)
            for kind in ("bad", "hostile", "good", "folder")
        },
    }


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _when(results: dict[str, dict[str, object]]) -> str:
    """When each figure was measured (a record from before dates carried the section's date)."""
    earlier = re.search(r"Measured .*?(\d{4}-\d\d-\d\d \d\d:\d\d UTC)", current_section())
    fallback = earlier.group(1) if earlier else "at an earlier run"
    dates: dict[str, list[str]] = {}
    for key, record in results.items():
        dates.setdefault(str(record.get("measured_at", fallback)), []).append(key)
    return "; ".join(f"{' and '.join(keys)} {date}" for date, keys in dates.items())


def render(results: dict[str, dict[str, object]], baseline: dict[str, object]) -> str:
    when = _when(results)
    lines = [
        START,
        "## Grading cost (`python -m bench.grading`)",
        "",
        f"Measured {when} on the shared 2-core machine; wall seconds are the documented"
        " command's, CPU seconds add its children (the steadier figure when other work"
        " shares the machine). Before: one fresh interpreter per grade process, its pytest"
        " controller and xdist workers each importing torch, every contract test of every"
        " package run. After: selection (only tests that load a swapped variable), one"
        " torch import per run (runs and test processes forked after import).",
        "",
        "| target | goal | before (wall / CPU, load) | after (wall / CPU, load) | met |",
        "|---|---|---|---|---|",
    ]
    goals = {"single": 8, "folder": 20, "class": 900, "drills": 60, "drill": 2}
    names = TARGET_NAMES
    for key, record in results.items():
        before = baseline.get(key, "not measured")
        after = (
            f"{record['wall_s']} s / {record['cpu_s']} s CPU, load "
            f"{record['load_before']}-{record['load_after']}"
        )
        met = "yes" if float(str(record["wall_s"])) <= goals[key] else "no (wall; see load)"
        if key == "drill" and met != "yes":
            met = f"no: {', '.join(list(record['slowest'])[:2])}"  # type: ignore[call-overload]
        lines.append(f"| {names[key]} | <= {goals[key]} s | {before} | {after} | {met} |")
    if "drill" in results:
        record = results["drill"]
        lines += [
            "",
            f"Drills: {len(dict(record['per_drill_s']))} suites, each forked from one warm process"  # type: ignore[call-overload]
            f" as `grade -- p19 FILE` runs it: median {record['median_s']} s, slowest"
            f" {', '.join(record['slowest'])}."  # type: ignore[arg-type]
            " The slowest row's wall is the one drill's suite, not the whole command.",
        ]
    if "class" in results:
        record = results["class"]
        errors, unexpected = (
            value if isinstance(value := record.get(key), list) else []
            for key in ("candidate_errors", "unexpected_candidate_errors")
        )
        lines += [
            "",
            f"Class: {record['submissions']} submissions ({record['kinds']}), every one"
            " self-contained; "
            f"{record['verdicts_as_expected']}/{record['submissions']} graded as expected"
            " (the verdict, and each known-bad one failed on its EXPECTED_OWNER); "
            f"{len(errors)} candidate errors ({len(unexpected)} unexpected); "
            f"per submission median {record['per_submission_median_s']} s, "
            f"max {record['per_submission_max_s']} s.",
        ]
        if record["wrong"]:
            lines.append(f"Unexpected verdicts: {record['wrong']}")
    lines += ["", END]
    return "\n".join(lines) + "\n"


def current_section() -> str:
    text = REPORT.read_text(encoding="utf-8") if REPORT.exists() else ""
    if START in text and END in text:
        return text.split(START, 1)[1].split(END, 1)[0]
    return ""


def current_before_cells() -> dict[str, object]:
    """The report's "before" cells, kept when no --baseline is given (a partial re-run)."""
    cells: dict[str, object] = {}
    for line in current_section().splitlines():
        parts = [part.strip() for part in line.strip().strip("|").split("|")]
        for key, name in TARGET_NAMES.items():
            if len(parts) == 5 and parts[0] == name:
                cells[key] = parts[2]
    return cells


def write_report(section: str) -> None:
    text = REPORT.read_text(encoding="utf-8")
    if START in text and END in text:
        notes = "".join(current_section().partition(NOTES)[1:]).strip()
        if notes:
            section = section.replace(f"\n{END}", f"\n{notes}\n\n{END}", 1)
        head, rest = text.split(START, 1)
        text = head + section.strip("\n") + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    REPORT.write_text(text, encoding="utf-8")


def recorded_class_run(folder: Path) -> dict[str, object]:
    expected = json.loads((folder / "expected.json").read_text())
    log = (folder / "run.log").read_text().splitlines()
    loads = [
        float(line.split("load average:")[1].split(",")[0])
        for line in log
        if "load average" in line
    ]
    timing = next(line for line in log if " s wall " in line).split()
    record: dict[str, object] = {
        "command": "nox -R -s grade -- --submissions DIR --jobs 2 --workers 1",
        "wall_s": float(timing[0]),
        "cpu_s": round(float(timing[3]) + float(timing[5]), 1),
        "load_before": loads[0],
        "load_after": loads[-1],
    }
    record.update(class_record(expected, folder / "out" / "class.json"))
    return record


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="single,folder,class")
    parser.add_argument("--class-size", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--baseline", type=Path, help="JSON {target: 'before' cell text}")
    parser.add_argument(
        "--class-run",
        type=Path,
        help="record a class run made by hand: DIR/expected.json, DIR/out/class.json and "
        "DIR/run.log (uptime, /usr/bin/time -f '%%e s wall %%U user %%S sys', uptime)",
    )
    args = parser.parse_args(argv)
    chosen = [part for part in args.only.split(",") if part]
    results: dict[str, dict[str, object]] = {}
    nox = ["nox", "-R", "-s", "grade", "--"]
    if args.class_run:
        chosen = [key for key in chosen if key != "class"]
        results["class"] = recorded_class_run(args.class_run)
    for key in chosen:
        print(f"bench.grading: {key} ...", flush=True)
        if key == "single":
            results[key] = measure([*nox, "kv_cache", str(SINGLE)])
        elif key == "folder":
            results[key] = measure([*nox, str(FOLDER)])
        elif key == "class":
            results[key] = bench_class(args.class_size, args.jobs)
        elif key == "drills":
            results.update(bench_drills())
        else:
            print(f"unknown figure {key!r}", file=sys.stderr)
            return 2
        for name in ("drills", "drill") if key == "drills" else (key,):
            shown = {k: v for k, v in results[name].items() if k != "tail"}
            print(json.dumps(shown), flush=True)
    baseline = json.loads(args.baseline.read_text()) if args.baseline else current_before_cells()
    previous = json.loads(OUT_JSON.read_text()) if OUT_JSON.exists() else {}
    OUT_JSON.write_text(json.dumps({**previous, **results}, indent=1) + "\n", encoding="utf-8")
    merged = {**previous, **results}
    order = [key for key in ("single", "folder", "class", "drills", "drill") if key in merged]
    write_report(render({key: merged[key] for key in order}, baseline))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
