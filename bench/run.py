"""gptlab benchmarks: writes bench/report.md and PNG plots (``nox -s bench``).

    python -m bench.run                  # full run, CPU (a few minutes)
    python -m bench.run --quick          # smoke run into bench/out/quick (never the report)
    python -m bench.run --device cuda    # everything on the GPU
    python -m bench.run --render         # re-render report.md from sections/*.json

Every figure is a ratio of methods measured side by side in this one process, on
identical weights, interleaved round by round (bench/common.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from . import chunked, context, decode, fast, fragment, grading, paged, prefix, scheduler, spec
from .common import Progress, Section, Settings, TargetCheck, machine_lines

SECTIONS: tuple[Callable[[Settings, Progress], Section], ...] = (
    decode.run,
    context.run,
    prefix.run,
    chunked.run,
    spec.run,
    paged.run,
    fast.run,
    scheduler.run,
    fragment.run,
)
TITLES = (
    "decode throughput",
    "decode latency vs context",
    "prefix cache",
    "chunked prefill",
    "speculative decoding",
    "paged K/V",
    "fast path (compiled decode, trained pair)",
    "continuous batching (scheduler)",
    "paper fragment served (M10)",
)


BENCH = Path(__file__).resolve().parent
QUICK_OUT = BENCH / "out" / "quick"  # ignored by git (bench/out/)


def output_folder(out: Path | None, quick: bool) -> Path:
    """Where the report goes: ``--out`` if given, else a scratch folder for ``--quick``."""
    if out is not None:
        return out
    return QUICK_OUT if quick else BENCH


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, one round (< 1 min)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch intra-op threads (CPU default 1: at this model size more threads gain "
        "little and collapse when other processes share the cores)",
    )
    parser.add_argument("--repeats", type=int, default=None, help="timed rounds per figure")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="report folder (default: bench/ for a full run, bench/out/quick for --quick, so "
        "a smoke run never overwrites the committed report)",
    )
    parser.add_argument(
        "--only", default="", help="comma-separated section numbers to run (default all)"
    )
    parser.add_argument(
        "--render",
        action="store_true",
        help="measure nothing: re-render report.md from the stored sections/*.json",
    )
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    args.out = output_folder(args.out, args.quick)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("bench: --device cuda but CUDA is not available", file=sys.stderr)
        return 2
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    elif device.type == "cpu":
        torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    repeats = args.repeats if args.repeats is not None else (1 if args.quick else 3)
    settings = Settings(device=device, quick=args.quick, out_dir=args.out, repeats=repeats)
    chosen = {int(part) for part in args.only.split(",") if part.strip()} or set(
        range(1, len(SECTIONS) + 1)
    )
    if args.render:
        chosen = set()

    started = time.perf_counter()
    progress = Progress(len(chosen))
    command = " ".join(["python -m bench.run", *argv])
    for number, (run, title) in enumerate(zip(SECTIONS, TITLES, strict=True), start=1):
        if number not in chosen:
            continue
        progress.section(title)
        section_started, load_before = time.perf_counter(), os.getloadavg()[0]
        section = run(settings, progress)
        provenance = _provenance(command, section_started, load_before)
        save_section(args.out, number, section, provenance)
    elapsed = time.perf_counter() - started

    report = args.out / "report.md"
    sections = load_sections(args.out)
    text = render(sections, settings) + _kept_grading_block(report)
    report.write_text(text, encoding="utf-8")
    print(f"bench: wrote {report} ({len(sections)} sections, {len(chosen)} measured now) "
          f"in {elapsed:.0f}s")  # fmt: skip
    return 0


def _kept_grading_block(report: Path) -> str:
    """The "Grading cost" block `bench.grading` writes between its markers, kept as it is."""
    previous = report.read_text(encoding="utf-8") if report.exists() else ""
    if grading.START not in previous or grading.END not in previous:
        return ""
    inside = previous.split(grading.START, 1)[1].split(grading.END, 1)[0]
    return f"\n{grading.START}{inside}{grading.END}\n"


# ---- every section's results are kept, so `--only N` re-measures one and re-renders all ----


def _provenance(command: str, started: float, load_before: float) -> str:
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    seconds = time.perf_counter() - started
    load_after = os.getloadavg()[0]
    return (
        f"Measured by `{command}` on {when} in {seconds:.0f} s; 1-minute load average "
        f"{load_before:.1f} before, {load_after:.1f} after."
    )


def save_section(out: Path, number: int, section: Section, provenance: str) -> None:
    record = {"number": number, "provenance": provenance, **dataclasses.asdict(section)}
    folder = out / "sections"
    folder.mkdir(exist_ok=True)
    path = folder / f"{number:02d}.json"
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def load_sections(out: Path) -> list[tuple[str, Section]]:
    """(provenance, section) for every saved section, in number order.

    Every ``sections/*.json`` is rendered, also one this module does not measure (a
    section another module writes in the same format), so an added section shows up.
    """
    records = [
        json.loads(path.read_text(encoding="utf-8")) for path in (out / "sections").glob("*.json")
    ]
    loaded = []
    for record in sorted(records, key=lambda r: (r.get("number", 0), r.get("title", ""))):
        targets = [TargetCheck(**target) for target in record.get("targets", [])]
        section = Section(
            record.get("title", "untitled section"),
            record.get("body", []),
            record.get("figures", []),
            targets,
        )
        loaded.append((record.get("provenance", ""), section))
    return loaded


def render(sections: list[tuple[str, Section]], settings: Settings) -> str:
    lines = [
        "# gptlab benchmarks",
        "",
        "Every ratio is measured side by side within one section's run, on identical "
        f"weights; times are medians of {settings.repeats} interleaved round(s) after a "
        "warm-up. Each section says when it was measured and how loaded the machine was; "
        "`python -m bench.run --only N` re-measures section N and re-renders this page.",
        "",
        "## Machine",
        "",
        *machine_lines(settings),
        "",
        "Models (fp32): modern variant `ModernConfig(vocab 8192, d_model 256, 4 layers, 4 query "
        "/ 2 key-value heads, d_ff 768)`, Llama-shaped, equal to transformers' "
        "`LlamaForCausalLM` on the same weights; GPT-2-shaped reference `GPTConfig(vocab 8192, "
        "d_model 256, 4 layers, 4 heads, d_ff 1024)`. Random weights from a fixed seed.",
        "",
    ]
    checks = [check for _, section in sections for check in section.targets]
    if checks:
        lines += [
            "## Targets",
            "",
            "| target | goal | achieved | met | what bounds it |",
            "|---|---|---|---|---|",
        ]
        lines += [_target_row(check) for check in checks]
        lines.append("")
    retired = [*decode.RETIRED_TARGETS, *context.RETIRED_TARGETS]
    lines += ["Retired targets, and why:", "", *[f"- {text}" for text in retired], ""]
    for provenance, section in sections:
        lines += [f"## {section.title}", "", f"_{provenance}_", "", *section.body]
        lines += [f"![{figure}]({figure})" for figure in section.figures]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _target_row(check: TargetCheck) -> str:
    met = {True: "yes", False: "no", None: "-"}[check.met]
    return f"| {check.name} | {check.target} | {check.achieved} | {met} | {check.bound} |"


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
