"""Grading cost: seconds per attempt and per class (a benchmark, never a timed test).

    python -m bench.grading [--only single,folder,class] [--class-size 100] [--jobs 2]

Run from the repository root with warm nox venvs (`nox -s grade` once). Measures,
each as the wall time of the documented command plus the CPU seconds it and its
children used (the machine is shared: CPU seconds are the steadier figure):

- single: `nox -R -s grade -- kv_cache FILE` with a faithful single-file kv_cache;
- folder: `nox -R -s grade -- FOLDER` with the seed-style folder of six modules;
- class:  `nox -R -s grade -- --submissions DIR --jobs 2 --workers 1` over a class
  generated in a temporary folder from the faithful, known-bad and hostile
  candidates (mostly single files, some folders), every verdict checked against
  the expected one (faithful: pass; known-bad: FAIL; SCOPE = "all" candidates break
  only this project's extensions, so they are left out of a contract-graded class).

Writes bench/grading.json and the "Grading cost" section of bench/report.md
(between its markers), with the 1-minute load average before and after each figure.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KNOWN_BAD = ROOT / "integration_tests" / "known_bad"
FAITHFUL = ROOT / "integration_tests" / "faithful"
SINGLE = FAITHFUL / "good_kv_cache_index_copy.py"
FOLDER = FAITHFUL / "seed_labs"
OUT_JSON = ROOT / "bench" / "grading.json"
REPORT = ROOT / "bench" / "report.md"
START, END = "<!-- grading:start -->", "<!-- grading:end -->"
# variable -> the file name a submission uses for it (the seed's lab names)
STEMS = {
    "TINY_GPT_MODULE": "tiny_gpt",
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


def make_class(root: Path, size: int) -> dict[str, str]:
    """`size` submission folders in `root`; returns {name: expected verdict}."""
    sources: list[tuple[str, list[tuple[str, Path]], str]] = []
    for path in sorted(KNOWN_BAD.glob("bad_*.py")):
        constants = _constants(path)
        if constants.get("SCOPE") == "all":
            continue
        kind = "hostile" if constants.get("RUN") == "isolated" else "bad"
        sources.append((f"{kind}_{path.stem[4:]}", [(constants["VARIABLE"], path)], "FAIL"))
    for path in sorted(FAITHFUL.glob("good_*.py")):
        variable = _constants(path)["VARIABLE"]
        sources.append((f"good_{path.stem[5:]}", [(variable, path)], "pass"))
    folder = [(p.stem, p) for p in sorted(FOLDER.glob("*.py"))]
    expected: dict[str, str] = {}
    index = 0
    while len(expected) < size:
        if index % 10 == 9:  # every tenth submission: the six-module seed-style folder
            name, verdict = f"{index:03d}_folder_seed_labs", "pass"
            (root / name).mkdir()
            for stem, path in folder:
                shutil.copy(path, root / name / f"{stem}.py")
        else:
            label, files, verdict = sources[index % len(sources)]
            name = f"{index:03d}_{label}"
            (root / name).mkdir()
            for variable, path in files:
                stem = STEMS[variable]
                text = as_submission(path.read_text(encoding="utf-8"), stem)
                (root / name / f"{stem}.py").write_text(text, encoding="utf-8")
        expected[name] = verdict
        index += 1
    return expected


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


def class_record(expected: dict[str, str], class_json: Path) -> dict[str, object]:
    """Verdicts against the expected ones, and per-submission seconds, of a class run."""
    payload = json.loads(class_json.read_text())
    got = {row["name"]: row["verdict"] for row in payload["submissions"]}
    notes = {row["name"]: row["note"] for row in payload["submissions"]}
    wrong = {
        name: (got.get(name), want, notes.get(name, ""))
        for name, want in expected.items()
        if got.get(name) != want
    }
    seconds = sorted(row["seconds"] for row in payload["submissions"])
    candidate_errors = sorted(n for n, note in notes.items() if note.startswith("candidate error"))
    return {
        "submissions": len(expected),
        "verdicts_as_expected": len(expected) - len(wrong),
        "wrong": wrong,
        "candidate_errors": candidate_errors,
        "per_submission_median_s": seconds[len(seconds) // 2],
        "per_submission_max_s": seconds[-1],
        "kinds": {
            kind: sum(name.split("_")[1] == kind for name in expected)
            for kind in ("bad", "hostile", "good", "folder")
        },
    }


def render(results: dict[str, dict[str, object]], baseline: dict[str, object]) -> str:
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
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
    goals = {"single": 8, "folder": 20, "class": 900}
    names = {
        "single": "`grade -- kv_cache FILE`",
        "folder": "`grade -- FOLDER` (six modules)",
        "class": "100 submissions, `--jobs 2`",
    }
    for key, record in results.items():
        before = baseline.get(key, "not measured")
        after = (
            f"{record['wall_s']} s / {record['cpu_s']} s CPU, load "
            f"{record['load_before']}-{record['load_after']}"
        )
        met = "yes" if float(str(record["wall_s"])) <= goals[key] else "no (wall; see load)"
        lines.append(f"| {names[key]} | <= {goals[key]} s | {before} | {after} | {met} |")
    if "class" in results:
        record = results["class"]
        lines += [
            "",
            f"Class: {record['submissions']} submissions ({record['kinds']}), "
            f"{record['verdicts_as_expected']}/{record['submissions']} verdicts as expected; "
            f"per submission median {record['per_submission_median_s']} s, "
            f"max {record['per_submission_max_s']} s.",
        ]
        if record["wrong"]:
            lines.append(f"Unexpected verdicts: {record['wrong']}")
    lines += ["", END]
    return "\n".join(lines) + "\n"


def write_report(section: str) -> None:
    text = REPORT.read_text(encoding="utf-8")
    if START in text and END in text:
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
        else:
            print(f"unknown figure {key!r}", file=sys.stderr)
            return 2
        shown = {k: v for k, v in results[key].items() if k != "tail"}
        print(json.dumps(shown), flush=True)
    baseline = json.loads(args.baseline.read_text()) if args.baseline else {}
    previous = json.loads(OUT_JSON.read_text()) if OUT_JSON.exists() else {}
    OUT_JSON.write_text(json.dumps({**previous, **results}, indent=1) + "\n", encoding="utf-8")
    merged = {**previous, **results}
    order = [key for key in ("single", "folder", "class") if key in merged]
    write_report(render({key: merged[key] for key in order}, baseline))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
