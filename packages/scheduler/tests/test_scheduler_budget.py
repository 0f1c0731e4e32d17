"""One step's budget: tokens, sequence cap, decode first, chunk sizes.

Per step: scheduled tokens <= max_num_batched_tokens, rows <= max_num_seqs, one
row per request, every row >= 1 token, at least one row while work is left.
Decode first: a step that schedules a prefill row also schedules every running
decode-ready request it did not preempt. A request alone is chunked
``min(remaining, budget)`` per step.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gptlab_testkit import boundary_settings

pytestmark = [pytest.mark.owner("batch_budget"), pytest.mark.contract]

# Derandomized, no shrinking (a broken candidate fails fast), no example database.
FAST = boundary_settings(12)


@FAST
@given(data=st.data())
def test_every_step_respects_budget_and_cap(data, draw_workload, play_workload):
    workload = draw_workload(data)

    def check(driver, record) -> None:
        ids = [row.request_id for row in record.scheduled]
        counts = [int(row.num_tokens) for row in record.scheduled]
        assert len(ids) == len(set(ids)), "a request got two rows in one step"
        assert all(count >= 1 for count in counts), f"a row of 0 tokens: {counts}"
        assert sum(counts) <= workload.max_num_batched_tokens, f"budget exceeded: {counts}"
        assert len(ids) <= workload.max_num_seqs
        assert driver.engine.stats.num_running <= workload.max_num_seqs
        assert {str(row.kind) for row in record.scheduled} <= {"prefill", "decode"}
        if not record.scheduled:  # an empty step changes nothing: it had no work either
            assert not driver.engine.has_unfinished_requests(), "work left, no row scheduled"

    play_workload(workload, check)


@FAST
@given(data=st.data())
def test_decodes_go_first(data, draw_workload, play_workload):
    """Decode-ready = emitted and not preempted since; prefill never runs past one.

    (A re-admitted request whose prefix hit leaves one token is a decode as well.)
    """
    workload = draw_workload(data)
    ready: set[str] = set()

    def check(driver, record) -> None:
        kinds = {row.request_id: str(row.kind) for row in record.scheduled}
        tokens = {row.request_id: int(row.num_tokens) for row in record.scheduled}
        before = ready - set(record.preempted)
        for rid, kind in kinds.items():
            if rid in before:
                assert (tokens[rid], kind) == (1, "decode"), f"decode-ready {rid}: {kind}"
            elif kind == "decode":
                emitted_before = len(driver.outputs[rid]) - (rid in record.emitted)
                assert tokens[rid] == 1 and emitted_before > 0, f"{rid} is no decode"
        if "prefill" in kinds.values():
            starved = before - set(kinds)
            assert not starved, f"prefill scheduled while decodes {sorted(starved)} waited"
        ready.difference_update(record.preempted)
        ready.update(record.emitted)
        ready.difference_update(record.finished)

    play_workload(workload, check)


@pytest.mark.parametrize(("T", "budget"), [(11, 4), (7, 7), (5, 1), (12, 16), (9, 3)])
def test_a_request_alone_is_chunked_by_the_budget(make_engine, rows_of, T, budget):
    driver = make_engine(max_num_batched_tokens=budget)
    prompt = [(3 * i + 1) % 16 for i in range(T)]
    driver.add("a", prompt, 3)
    driver.run()
    steps = [rows_of(record)["a"] for record in driver.records]
    chunks = math.ceil(T / budget)
    want = [(min(budget, T - budget * i), "prefill") for i in range(chunks)]
    assert steps == [*want, (1, "decode"), (1, "decode")]
    assert [bool(record.emitted) for record in driver.records] == [False] * (chunks - 1) + [
        True
    ] * 3


def test_prefill_takes_what_the_decodes_leave(make_engine, rows_of):
    driver = make_engine(max_num_batched_tokens=4)
    driver.add("a", [1, 2, 3], 8)
    driver.step()
    driver.add("b", [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], 2)
    assert rows_of(driver.step()) == {"a": (1, "decode"), "b": (3, "prefill")}
    assert rows_of(driver.step()) == {"a": (1, "decode"), "b": (3, "prefill")}


def test_the_sequence_cap_holds_back_admission(make_engine, rows_of):
    driver = make_engine(max_num_seqs=2, max_num_batched_tokens=32)
    for rid in "abc":
        driver.add(rid, [1, 2], 3)
    first = driver.step()
    assert set(rows_of(first)) == {"a", "b"}
    assert driver.engine.status("c") == "waiting"
    assert driver.engine.stats.num_running == 2
    driver.run()
    assert all(len(driver.outputs[rid]) == 3 for rid in "abc")


def test_a_budget_of_one_token_still_finishes_everything(make_engine, greedy_alone):
    driver = make_engine(max_num_batched_tokens=1)
    driver.add("a", [1, 5, 9], 4)
    driver.add("b", [2, 6], 4)
    driver.run()
    assert all(
        sum(int(row.num_tokens) for row in record.scheduled) == 1
        for record in driver.records
        if record.scheduled
    )
    assert driver.outputs["a"] == greedy_alone([1, 5, 9], 4)
    assert driver.outputs["b"] == greedy_alone([2, 6], 4)


def test_a_partial_prefill_waits_behind_a_decode(make_engine, rows_of):
    """Running decode-ready requests are served before partially prefilled ones."""
    driver = make_engine(max_num_batched_tokens=3)
    driver.add("a", [1, 2], 6)
    driver.step()  # a's prompt: a emits, decode-ready from now on
    driver.add("b", [4, 5, 6, 7, 8, 9, 10, 11, 12, 13], 2)
    for _ in range(3):  # b stays partially prefilled for these steps
        assert rows_of(driver.step()) == {"a": (1, "decode"), "b": (2, "prefill")}


def test_decodes_fill_the_budget_before_any_prefill_chunk(make_engine, rows_of):
    driver = make_engine(max_num_batched_tokens=2)
    driver.add("a", [1], 5)
    driver.add("b", [2], 5)
    driver.step()  # both prompts in one step: both decode-ready
    driver.add("c", [3, 4, 5, 6], 2)
    for _ in range(3):
        assert rows_of(driver.step()) == {"a": (1, "decode"), "b": (1, "decode")}
    assert driver.engine.status("c") == "waiting"


def test_a_partial_prefill_gets_what_three_decodes_leave(make_engine, rows_of):
    driver = make_engine(max_num_batched_tokens=4)
    for rid, prompt in (("a", [1]), ("b", [2]), ("c", [3])):
        driver.add(rid, prompt, 6)
    driver.step()  # three one-token prompts: all decode-ready
    driver.add("d", [4, 5, 6, 7, 8, 9], 2)
    decodes = {rid: (1, "decode") for rid in "abc"}
    for _ in range(3):
        assert rows_of(driver.step()) == {**decodes, "d": (1, "prefill")}
