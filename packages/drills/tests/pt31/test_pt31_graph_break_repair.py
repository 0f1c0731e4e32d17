"""PT31 decode_core / decode_step / graph_breaks: the start's decode step, compiled whole.

The core's and the wrapper's eager values reach this process as values and are compared
with a float64 row loop computed before the call; `history` is this test's recorder, so
what the wrapper appends is seen here. graph_breaks()'s pairs are checked against
torch._dynamo.explain, run here on the supplied start file. Whether fullgraph=True succeeds
and what the compiled core returns are asked of the candidate's own torch (`torch_beside`):
its word, so PT31.9 and PT31.10 are advisory.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from importlib import resources

import pytest
import torch

from gptlab_testkit import candidate, test_device
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded
from gptlab_testkit.rank_pair import torch_beside

drill = candidate("DRILL_PT31_MODULE")

pytestmark = [pytest.mark.owner("pt31"), pytest.mark.contract]

EOS = 2
OUTPUTS = ("tokens", "finished", "scores")


class History:
    """The wrapper's `history`: records each append (a test object, lent to a worker)."""

    def __init__(self) -> None:
        self.appended: list[torch.Tensor] = []

    def append(self, item: torch.Tensor) -> None:
        self.appended.append(item)

    def __len__(self) -> int:
        return len(self.appended)


def step_inputs(lengths: list[int], finished: list[bool], t: int, v: int = 7, *, seed: int):
    """logits [B, T, V] whose padding holds the largest logit (reading it picks token V-1);
    eos is never a row's argmax here unless a test puts it there."""
    b = len(lengths)
    logits = seeded(b, t, v, seed=seed)
    logits[..., EOS] -= 4.0
    for row, n in enumerate(lengths):
        logits[row, n:, v - 1] = 50.0  # padding past the row's last real position
    scores = seeded(b, seed=seed + 1)
    lengths_t = torch.tensor(lengths, dtype=torch.int64, device=test_device())
    finished_t = torch.tensor(finished, dtype=torch.bool, device=test_device())
    return logits, lengths_t, finished_t, scores


def oracle(logits, lengths, finished, scores, eos_id: int = EOS):
    """One row at a time, in float64."""
    tokens, done, total = [], [], []
    for row in range(logits.shape[0]):
        logprobs = torch.log_softmax(logits[row, int(lengths[row]) - 1].double(), dim=-1)
        if bool(finished[row]):
            token, gain = eos_id, 0.0
        else:
            token = int(logprobs.argmax())
            gain = float(logprobs[token])
        tokens.append(token)
        done.append(bool(finished[row]) or token == eos_id)
        total.append(float(scores[row]) + gain)
    return torch.tensor(tokens), torch.tensor(done), torch.tensor(total, dtype=torch.float64)


def assert_step(got, want, label: str) -> None:
    tokens, finished, scores = got
    assert tokens.dtype == torch.int64 and finished.dtype == torch.bool, f"{label}: dtypes"
    assert scores.dtype == torch.float32, f"{label}: scores are {scores.dtype}"
    assert tokens.shape == finished.shape == scores.shape == want[0].shape, f"{label}: shapes"
    assert torch.equal(tokens.cpu(), want[0]), f"{label}: tokens {tokens} want {want[0]}"
    assert torch.equal(finished.cpu(), want[1]), f"{label}: finished {finished} want {want[1]}"
    assert torch.allclose(scores.cpu().double(), want[2], atol=1e-5, rtol=1e-5), (
        f"{label}: scores {scores} want {want[2]}"
    )


BRANCHES = {
    "no row finished": dict(lengths=[4, 2, 3], finished=[False, False, False]),
    "rows 1 and 3 finished": dict(lengths=[4, 1, 3, 2], finished=[False, True, False, True]),
    "every row finished": dict(lengths=[2, 4], finished=[True, True]),
}


@pytest.mark.clause("PT31.1")
def test_the_functions_bind_by_position_and_by_name():
    args = step_inputs([3, 2], [False, True], 4, seed=1)
    logits, lengths, finished, scores = args
    named = dict(logits=logits, lengths=lengths, finished=finished, scores=scores, eos_id=EOS)
    assert_binds(drill.decode_core, *args, EOS)
    assert_binds(drill.decode_core, **named)
    assert_binds(drill.decode_step, *args, EOS, History())
    assert_binds(drill.decode_step, **named, history=History())
    assert_binds(drill.graph_breaks)
    want = oracle(*args)
    got = drill.decode_core(
        eos_id=EOS, scores=scores, finished=finished, lengths=lengths, logits=logits
    )
    assert_step(got, want, "decode_core by name")
    stepped = drill.decode_step(
        history=History(), eos_id=EOS, scores=scores, finished=finished, lengths=lengths,
        logits=logits,
    )  # fmt: skip
    assert_step(stepped[:3], want, "decode_step by name")


@pytest.mark.clause("PT31.4", "PT31.2", "PT31.3")
@pytest.mark.parametrize("name", sorted(BRANCHES))
def test_the_core_gives_the_loops_values_for_each_outcome_of_the_branch(name):
    spec = BRANCHES[name]
    args = step_inputs(spec["lengths"], spec["finished"], 4, seed=3)
    want = oracle(*args)
    got = drill.decode_core(*args, EOS)
    assert len(got) == 3, f"decode_core returned {len(got)} values"
    assert_step(got, want, name)


@pytest.mark.clause("PT31.4")
def test_a_row_that_emits_eos_becomes_finished():
    logits, lengths, finished, scores = step_inputs([3, 4, 2], [False, False, True], 4, seed=5)
    logits[1, 3, EOS] = 30.0  # row 1's last real position now prefers eos
    want = oracle(logits, lengths, finished, scores)
    assert want[1].tolist() == [False, True, True]
    assert_step(drill.decode_core(logits, lengths, finished, scores, EOS), want, "eos emitted")


@pytest.mark.clause("PT31.4")
def test_another_eos_id_is_used_for_finished_rows():
    args = step_inputs([2, 3, 1], [False, True, True], 3, seed=7)
    want = oracle(*args, eos_id=5)
    assert_step(drill.decode_core(*args, 5), want, "eos_id 5")


@pytest.mark.clause("PT31.3", "PT31.4")
def test_bfloat16_logits_give_float32_scores():
    logits, lengths, finished, scores = step_inputs([3, 1, 2], [False, False, True], 3, seed=9)
    logits = logits.to(torch.bfloat16)
    want = oracle(logits, lengths, finished, scores)
    assert_step(drill.decode_core(logits, lengths, finished, scores, EOS), want, "bf16 logits")


SIZES = [(1, 1, 5), (1, 7, 11), (2, 5, 5), (5, 3, 11), (6, 7, 5)]


@pytest.mark.clause("PT31.5")
@pytest.mark.parametrize(("b", "t", "v"), SIZES, ids=[f"B{b} T{t} V{v}" for b, t, v in SIZES])
def test_batch_and_chunk_sizes_keep_the_semantics(b, t, v):
    lengths = [t if row % 2 == 0 else (row % t) + 1 for row in range(b)]  # last and earlier
    args = step_inputs(lengths, [row % 3 == 1 for row in range(b)], t, v, seed=11 + b + t)
    want = oracle(*args)
    assert_step(drill.decode_core(*args, EOS), want, f"B={b} T={t} V={v}")


@pytest.mark.clause("PT31.6", "PT31.2", "PT31.3")
@pytest.mark.parametrize("name", sorted(BRANCHES))
def test_the_wrapper_returns_the_cores_values_and_the_live_count(name):
    spec = BRANCHES[name]
    args = step_inputs(spec["lengths"], spec["finished"], 4, seed=13)
    want = oracle(*args)
    got = drill.decode_step(*args, EOS, History())
    assert len(got) == 4, f"decode_step returned {len(got)} values"
    assert_step(got[:3], want, name)
    live = got[3]
    assert type(live) is int, f"live is {type(live).__name__}, not an int"
    assert live == int((~want[1]).sum()), f"{name}: live {live}"


@pytest.mark.clause("PT31.6")
def test_the_wrapper_appends_the_steps_tokens_once():
    args = step_inputs([4, 2, 3], [False, True, False], 4, seed=15)
    want, history = oracle(*args), History()
    drill.decode_step(*args, EOS, history)
    assert len(history.appended) == 1, f"{len(history.appended)} appends for one step"
    appended = history.appended[0]
    assert isinstance(appended, torch.Tensor) and appended.dtype == torch.int64
    assert torch.equal(appended.cpu(), want[0]), f"appended {appended}, tokens {want[0]}"


@pytest.mark.clause("PT31.6")
def test_three_steps_append_three_times_in_order():
    history, wants = History(), []
    for step in range(3):
        args = step_inputs([3, 2], [False, step == 2], 3, seed=17 + step)
        wants.append(oracle(*args)[0])
        drill.decode_step(*args, EOS, history)
    assert len(history.appended) == 3
    for step, (got, want) in enumerate(zip(history.appended, wants, strict=True)):
        assert torch.equal(got.cpu(), want), f"step {step}: appended {got}, want {want}"


@pytest.mark.clause("PT31.7")
@pytest.mark.parametrize("function", ["decode_core", "decode_step"])
def test_the_inputs_are_only_read(function):
    logits, lengths, finished, scores = step_inputs([3, 4, 1], [False, True, False], 4, seed=19)
    logits[0, 2, EOS] = 30.0  # row 0 finishes now: an in-place |= would write finished
    want = oracle(logits, lengths, finished, scores)
    extra = (History(),) if function == "decode_step" else ()
    with inputs_untouched(logits=logits, lengths=lengths, finished=finished, scores=scores):
        got = getattr(drill, function)(logits, lengths, finished, scores, EOS, *extra)
    assert_step(got[:3], want, function)


# ---- PT31.8: the start's graph breaks, as torch._dynamo.explain reports them here ----

KINDS = ("data-dependent branch", "tensor.item", "print")


def kind_of(reason: str) -> str:
    """Dynamo's reason, in the contract's words."""
    text = reason.lower()
    if "item()" in text:
        return "tensor.item"
    if "print" in text:
        return "print"
    if "generic_jump" in text or "data-dependent" in text or "data dependent" in text:
        return "data-dependent branch"
    return text.splitlines()[0] if text else "?"


@functools.cache
def start_breaks() -> tuple[tuple[str, str], ...]:
    """(line, kind) for each break explain finds in the supplied start's decode_step, with
    and without a finished row (each outcome of its branch runs other code)."""
    path = resources.files("gptlab_drills").joinpath("artifacts", "pt31_start.py")
    spec = importlib.util.spec_from_file_location("pt31_supplied_start", str(path))
    assert spec is not None and spec.loader is not None
    start = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(start)
    found: dict[str, str] = {}
    for finished in ([False, True, False], [False, False, False]):
        torch._dynamo.reset()
        args = step_inputs([3, 2, 4], finished, 4, seed=21)
        explained = torch._dynamo.explain(start.decode_step)(*args, EOS, [])
        for reason in explained.break_reasons:
            frame = [f for f in reason.user_stack if f.filename == str(path)][-1]
            found[str(frame.line).strip()] = kind_of(str(reason.reason))
    torch._dynamo.reset()
    return tuple(sorted(found.items()))


def stated_breaks() -> list[tuple[str, str]]:
    stated = drill.graph_breaks()
    assert isinstance(stated, list | tuple), f"graph_breaks() returned a {type(stated).__name__}"
    pairs = []
    for pair in stated:
        assert isinstance(pair, list | tuple) and len(pair) == 2, f"not a (line, kind): {pair!r}"
        assert all(isinstance(part, str) for part in pair), f"not two strings: {pair!r}"
        pairs.append((pair[0].strip(), pair[1].strip().lower()))
    return pairs


@pytest.mark.clause("PT31.8", "PT31.1")
def test_the_stated_lines_are_the_lines_dynamo_breaks_at():
    found = {line for line, _ in start_breaks()}
    assert len(found) >= 3, f"explain found {sorted(found)} in the start"
    stated = {line for line, _ in stated_breaks()}
    assert stated == found, (
        f"named but no break: {sorted(stated - found)}; a break not named: {sorted(found - stated)}"
    )


@pytest.mark.clause("PT31.8")
def test_each_break_is_named_with_dynamos_reason():
    stated = dict(stated_breaks())
    for line, kind in start_breaks():
        assert kind in KINDS, f"explain's reason at {line!r} is {kind!r}: not a contract kind"
        assert stated.get(line) == kind, f"{line!r}: stated {stated.get(line)!r}, dynamo {kind!r}"


@pytest.mark.clause("PT31.8")
def test_each_break_is_named_once():
    stated = stated_breaks()
    assert len(stated) == len(start_breaks()), f"{len(stated)} pairs for {len(start_breaks())}"
    assert len({line for line, _ in stated}) == len(stated), f"a line named twice: {stated}"


# ---- PT31.9-PT31.10: compiled by the candidate's torch (advisory) ----


def compiled_core(**options):
    """decode_core compiled whole by the candidate's torch, and the counter of its graphs."""
    if "MUTANT_UNDER_TEST" in os.environ:  # mutmut wraps decode_core in a contextvar read
        pytest.skip("under mutmut: dynamo cannot trace its trampoline (PT31.9-10 advisory)")
    torch_beside(drill, "torch._dynamo").reset()
    counter = torch_beside(drill, "torch._dynamo.testing").CompileCounter()
    compile_ = torch_beside(drill, "torch").compile
    return compile_(drill.decode_core, backend=counter, fullgraph=True, **options), counter


def run_compiled(compiled, args, label: str):
    try:
        return compiled(*args, EOS)
    except Exception as error:  # a graph break under fullgraph=True
        pytest.fail(f"torch.compile(decode_core, fullgraph=True) failed, {label}: {error}")


@pytest.mark.clause("PT31.9")
def test_the_core_compiles_whole_for_both_outcomes_of_the_branch():
    compiled, _ = compiled_core()
    for name, finished in [("no row finished", [False] * 3), ("row 1", [False, True, False])]:
        args = step_inputs([4, 2, 3], finished, 4, seed=23)  # one shape: one graph serves both
        want = oracle(*args)
        assert_step(run_compiled(compiled, args, name), want, f"compiled, {name}")


def dynamic_case(b: int, t: int, seed: int):
    lengths = [(row % t) + 1 for row in range(b)]
    return step_inputs(lengths, [row == 1 for row in range(b)], t, 5, seed=seed)


@pytest.mark.clause("PT31.10")
def test_one_dynamic_graph_serves_other_batch_sizes():
    compiled, counter = compiled_core(dynamic=True)
    for b in (2, 4, 5):
        args = dynamic_case(b, 3, seed=29 + b)
        assert_step(run_compiled(compiled, args, f"B={b}"), oracle(*args), f"dynamic, B={b}")
    assert counter.frame_count == 1, f"{counter.frame_count} graphs for three batch sizes"


@pytest.mark.clause("PT31.10")
def test_one_dynamic_graph_serves_other_batch_and_chunk_sizes():
    compiled, counter = compiled_core(dynamic=True)
    for b, t in [(2, 3), (4, 6), (5, 2)]:
        args = dynamic_case(b, t, seed=31 + b)
        label = f"B={b} T={t}"
        assert_step(run_compiled(compiled, args, label), oracle(*args), f"dynamic, {label}")
    assert counter.frame_count == 1, f"{counter.frame_count} graphs for three sizes"
