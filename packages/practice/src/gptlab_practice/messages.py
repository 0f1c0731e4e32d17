"""What the commands say about an attempt: a start, a check (each stage's verdict, the
first wrong decision, what comes next), a reveal. Lines only; the command line prints them."""

from __future__ import annotations

import re
import shlex
import textwrap
from collections.abc import Callable
from pathlib import Path

from .build_rubric import build_ready
from .history import duration
from .rubric import MODEL_RUBRIC, MODEL_RUBRIC_KEYS
from .sampler import is_transfer_step, transfer_parts
from .stages import Mechanism, readme_of, reference_of
from .store import Attempt, Review
from .verdicts import StageVerdict
from .workbench import Checked, Started, install_hint

FAILURES_SHOWN = 3  # failed tests a check names; the rest are counted


def when_due(step: str) -> str:
    """A scheduled re-solve's step in words, the same in `due`, `check` and `status`."""
    if is_transfer_step(step):
        return f"a different case three days after the miss at {transfer_parts(step)[0]}"
    return {
        "same day": "later the same day, after an unrelated task",
        "next day": "the next day",
        "3 days": "three days after the miss",
        "a week": "a week after the miss",
    }.get(step, step)


def step_name(step: str) -> str:
    """A step as a short label (a transfer step without its why)."""
    return f"transfer (after {transfer_parts(step)[0]})" if is_transfer_step(step) else step


def sibling_why(review: Review) -> str:
    """Why a transfer review drew this case (empty for any other review)."""
    if not is_transfer_step(review.step):
        return ""
    missed, why = transfer_parts(review.step)
    return f"{review.item} is the sibling of {missed}: {why or 'a different case'}"


def next_resolve(item: str, pending: Review | None) -> str:
    """The one sentence about an item's next re-solve: its pending one (the kit's spacing
    after a miss), else the later-day one that learned needs."""
    if pending is not None:
        return (
            f"Next re-solve: {pending.due_day}, {when_due(pending.step)}, from an empty file"
            f" (`start {item}`)."
        )
    return (
        f"Next re-solve: on a later day (learned needs one clean one), from an empty file"
        f" (`start {item}`)."
    )


def announce(mechanism: Mechanism, number: int) -> list[str]:
    stage = mechanism.stage(number)
    return [
        f"stage {number}/{len(mechanism.stages)} ({stage.minutes}m): {stage.build}",
        f"  stop when: {stage.stop}",
    ]


def started(begun: Started) -> list[str]:
    from .grader import graded_names

    mechanism = begun.mechanism
    lines = []
    if begun.archived is not None:
        lines.append(f"archived {begun.path.name} -> {begun.archived}")
    lines.append(f"{mechanism.package} attempt {begun.number}: {begun.path}")
    drill = mechanism.drill
    drill_kind, drill_key = getattr(drill, "kind", ""), getattr(drill, "key", "")
    if begun.from_artifact and drill_kind == "profile":  # a slow loop and its harness
        lines.append(
            "starts from the supplied slow loop (a profile case): profile it with "
            f"`python -m gptlab_drills.artifacts.{drill_key}_harness {begun.path}`, then repair it"
        )
    elif begun.from_artifact:
        lines.append("starts from the supplied broken artifact (a debug case): repair it")
    if begun.repair_for is not None:
        sent = begun.repair_for
        lines.append(
            f"repair for {sent.mechanism} stage {sent.stage}: its clock is paused until "
            f"{mechanism.package} passes"
        )
    lines.append(f"graded names: {', '.join(graded_names(mechanism))}")
    return lines + announce(mechanism, 1)


def checked(result: Checked, root: Path | None, home: Path) -> list[str]:
    """What a recorded check says: each stage's verdict, the decision, what comes next."""
    mechanism, recorded = result.mechanism, result.after
    lines: list[str] = []
    for verdict_ in result.verdicts:
        lines += report(mechanism, verdict_, result.spent[verdict_.stage], root, home)
    if result.decided:
        noted = recorded.first_wrong_note
        broken = result.verdicts[-1].broken
        clause = clause_line(root, broken[0]) if broken else ""
        lines.append(
            f"  first wrong decision recorded: {recorded.first_wrong_owner}"
            + (f", first broken clause {clause}" if clause else "")
            + (f' (note: "{noted}")' if noted else ' (say what you decided: check --note "...")')
        )
    elif result.owner and not result.decide and result.before.first_wrong_owner is None:
        lines.append(
            "  not recorded as a decision (a save is not one): `check` records it, or the"
            " stage's budget running out"
        )
    lines.append(f"  graded in {result.wall_s:.1f} s")
    lines.append(  # practice runs the attempt in-process for speed: nothing guards the score
        "  unguarded: your code ran beside the tests (fast, for practice);"
        " only `grade` judges it out of its reach"
    )
    if not result.ledger_filled:
        lines.append("  ledger: not filled (shapes, aliasing, stability, costs: learned needs it)")
    lines += build_rubric_lines(result)
    if result.decided and result.scheduled:
        lines.append(
            "  re-solves scheduled: "
            + ", ".join(f"{r.item} {r.due_day} ({step_name(r.step)})" for r in result.scheduled)
        )
        lines += [f"  {sibling_why(r)}" for r in result.scheduled if sibling_why(r)]
    if recorded.status == "done":
        lines += finished(result)
    elif result.passed:
        lines += announce(mechanism, recorded.stage)
    return lines


def build_rubric_lines(result: Checked) -> list[str]:
    """A model build's check: the rubric evidence per dimension beside the learner's own
    scores, and once all seven are given, ready or not by the kit's rule."""
    if not result.rubric:
        return []
    kit = result.mechanism.kit_name
    lines = [f"  model-build rubric, {kit}: what this check's tests saw | your score (0-4)"]
    mine = result.rubric_scores
    for key, dimension in MODEL_RUBRIC:
        given = str(mine[key]) if key in mine else "-"
        lines.append(f"    {key:<10} {result.rubric.get(key, '-'):<52} | {given}  ({dimension})")
    missing = [key for key in MODEL_RUBRIC_KEYS if key not in mine]
    if missing:
        flags = " ".join(f"--score {key}=N" for key in missing)
        lines.append(f"    score yourself ({7 - len(missing)} of 7 given): check {flags}")
    else:
        lines.append(f"    yours: {build_ready(mine)[1]} (ready at 24/28 with none below 2)")
    return lines


def finished(result: Checked) -> list[str]:
    """What a finished attempt leads to: the stage to resume after a repair, a re-solve."""
    mechanism = result.mechanism
    lines = []
    if result.unanswered:
        lines.append(
            f"  {result.unanswered} probe(s) unanswered: answer them in the header without "
            f"reopening the code, then `check {mechanism.package}` records them"
        )
    sent, unit = result.resume, result.resume_unit
    if sent is not None and unit is not None:
        lines.append(
            f"{mechanism.package} passed: resume {sent.mechanism} stage "
            f"{sent.stage}/{sent.stage_count} (`check {sent.mechanism}` or "
            f"`watch {sent.mechanism}`); its clock did not count the drill"
        )
        return lines + announce(unit, sent.stage)
    what = (
        "every stage passed" if mechanism.drill is None and not mechanism.resolve_of else "passed"
    )
    lines.append(f"{mechanism.package}: {what}. {next_resolve(mechanism.package, result.pending)}")
    for named in mechanism.resolves:
        stage = named.stages[0]
        lines.append(
            f"  its named re-solve, on a later day: `start {named.package}` "
            f"({stage.minutes}m: {stage.build})"
        )
    return lines


def report(
    mechanism: Mechanism, verdict_: StageVerdict, spent: float, root: Path | None, home: Path
) -> list[str]:
    """One stage's verdict: PASS, or FAIL with its owner, clauses, tests and repair drills."""
    from gptlab_testkit import drill_labels, hint_for, no_owning_drill

    from .grader import related_drills, repair_drills, repair_target

    stage = mechanism.stage(verdict_.stage)
    head = f"{mechanism.package} stage {stage.number}/{len(mechanism.stages)}"
    late = " (over budget)" if spent > stage.budget_s else ""
    clock = f"{duration(spent)} of {stage.minutes}m{late}"
    if verdict_.passed:
        return [f"{head}: PASS  {verdict_.tests_passed} tests, {clock}"]
    if verdict_.owner is None:
        return [
            f"{head}: FAIL  {clock}",
            f"  the attempt cannot be graded: {verdict_.reason}",
            f"  {hint(root, verdict_.reason, hint_for)}",  # that cause's advice only
        ]
    what, repair = repair_target(verdict_.owner)
    total = verdict_.tests_passed + len(verdict_.failed)
    lines = [
        f"{head}: FAIL  {len(verdict_.failed)} of {total} tests failed, {clock}",
        f"  first failing owner: {verdict_.owner} ({what})",
        f"  repair target: {repair}",
    ]
    if verdict_.broken:
        lines.append(f"  clauses broken: {', '.join(verdict_.broken)}")
    shown = verdict_.failed[:FAILURES_SHOWN]
    for result in shown:
        lines.append(f"  failed: {result.nodeid.split('::')[-1]}: {result.reason}")
    if len(verdict_.failed) > len(shown):
        more = len(verdict_.failed) - len(shown)
        lines.append(f"  ... and {more} more failed (every one: {every_one(mechanism, home)})")
    drills = repair_drills(verdict_.owner, mechanism.package)
    if drills:
        lines.append(
            f"  repair in the owning drill, then resume this stage: {drill_labels(drills)}"
        )
        lines.append(f"  start the first: `repair` (or `start {drills[0]}`)")
    elif related := related_drills(verdict_.owner):
        lines.append(f"  {no_owning_drill(f'{mechanism.package} stage {stage.number}', related)}")
    return lines


CLAUSE_LINE = re.compile(
    r"^- \*\*(?P<id>(?:PT|P|T|M)\d+\.\d+)\*\* \((?P<kind>[^)]*)\) (?P<text>.*)$"
)


def clause_line(root: Path | None, clause_id: str) -> str:
    """`P19.6 (semantics) grouped queries: ...`, from the README that states it (the
    drills', modern_lm's, cache_aware_lm's or the kernels'), cut to a line; the id alone
    where none is found. Read line by line (a numbering gap elsewhere in a README hides
    nothing here)."""
    for package in ("drills", "modern_lm", "cache_aware_lm", "kernels"):
        readme = (root or Path(".")) / "packages" / package / "README.md"
        try:
            lines = readme.read_text(encoding="utf-8").splitlines() if readme.is_file() else []
        except OSError:
            lines = []
        for line in lines:
            found = CLAUSE_LINE.match(line)
            if found and found["id"] == clause_id:
                text = f"{clause_id} ({found['kind']}) {found['text']}"
                return textwrap.shorten(text, 100)
    return clause_id


def m03_branch(branch: str | None, unit: Mechanism) -> str:
    """Which M03 `start M03` began, and why (the branch the diagnostic froze, or none yet)."""
    if branch is None:
        return (
            f"M03 is {unit.label} (any cache-aware model) while no route is recorded; M03's"
            " advanced branch, cache-aware over your M02, is `start cache_aware_modern`"
            " (`diagnose` freezes the branch from P19)"
        )
    return f"M03 on your {branch} branch (frozen from P19 at its deadline): {unit.label}"


def every_one(mechanism: Mechanism, home: Path) -> str:
    """The grade that lists every failed test of the attempt's suite (judged, as a
    teacher's grade is), each with its reason and where it raised in the attempt."""
    from .grader import attempt_filename

    target = mechanism.package.lower() if mechanism.drill else mechanism.suite
    path = home / attempt_filename(mechanism)
    command = ["python", "-m", "gptlab_testkit.grade", target, str(path)]
    return f"`{shlex.join([*command, '--', '--gptlab-failures-shown=0'])}`"


def hint(root: Path | None, reason: str, hint_for: Callable[[str], str]) -> str:
    """The grader's hint, unless the missing module is one of this project's packages:
    then the install is what is missing, not a file beside the attempt."""
    missing = re.search(r"missing module '(\w+)", reason)
    if missing and root and (root / "packages" / missing.group(1)).is_dir():
        return install_hint(missing.group(1))
    return hint_for(reason)


def revealed(attempt: Attempt, mechanism: Mechanism, root: Path | None) -> list[str]:
    """Where the reference is, after the first wrong decision (or that none is recorded)."""
    where_root = root or Path("<gptlab checkout>")
    lines = []
    if attempt.first_wrong_owner is None:
        lines.append("no first wrong decision recorded yet (the seed records it before reading)")
    else:
        note = f': "{attempt.first_wrong_note}"' if attempt.first_wrong_note else ""
        where = f"stage {attempt.first_wrong_stage}"
        lines.append(f"first wrong decision: {attempt.first_wrong_owner} ({where}){note}")
    if mechanism.drill:
        lines.append(f"reference: {where_root / reference_of(mechanism.drill)}")
        lines.append(f"README:    {where_root / readme_of(mechanism.drill)}")
    else:
        folder = where_root / "packages" / mechanism.folder
        lines.append(f"reference: {folder / 'src' / mechanism.folder}")
        lines.append(f'README:    {folder / "README.md"}, section "{mechanism.readme_section}"')
    lines.append(f"attempt {attempt.number} is marked as having opened the reference")
    return lines
