"""Preemption: who goes, where it goes, and that it comes back exact.

When a running request's next tokens need a block and none is free or cached,
the most recently admitted running request not yet scheduled in the step is
preempted: blocks freed, back to the FRONT of the waiting queue, recomputed later
from prompt + output. Nothing starves.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gptlab_testkit import boundary_settings

pytestmark = [pytest.mark.owner("preemption"), pytest.mark.contract]

# Derandomized, no shrinking (a broken candidate fails fast), no example database.
FAST = boundary_settings(12)

# Blocks of 4, three blocks: a's 4-token prompt fills its block, b's and c's 2-token
# prompts leave room in theirs. After the first step every block is held and only a
# (the oldest) needs a new one for its next token.
PROMPTS = {"a": [1, 2, 3, 4], "b": [5, 6], "c": [7, 8], "d": [9, 10]}


def crowded(make_engine):
    driver = make_engine(num_blocks=3, block_size=4, max_num_batched_tokens=16, max_num_seqs=3)
    for rid, prompt in PROMPTS.items():
        driver.add(rid, prompt, 2)
    first = driver.step()
    return driver, first


def test_the_newest_running_request_is_preempted(make_engine, rows_of):
    driver, first = crowded(make_engine)
    assert rows_of(first) == {"a": (4, "prefill"), "b": (2, "prefill"), "c": (2, "prefill")}
    assert driver.engine.stats.free_blocks == 0
    second = driver.step()
    assert list(second.preempted) == ["c"]
    assert rows_of(second) == {"a": (1, "decode"), "b": (1, "decode")}
    assert driver.engine.status("c") == "waiting"
    assert driver.engine.stats.preemptions == 1


def test_a_preempted_request_goes_to_the_front_and_resumes_exact(
    make_engine, rows_of, greedy_alone
):
    driver, _ = crowded(make_engine)
    driver.step()  # c preempted; d (added before c's preemption) waits behind it
    admitted: list[str] = []
    for _ in range(400):
        if not driver.engine.has_unfinished_requests():
            break
        record = driver.step()
        admitted += [rid for rid in rows_of(record) if rid in "cd" and rid not in admitted]
    assert not driver.engine.has_unfinished_requests()
    assert admitted == ["c", "d"]
    for rid, prompt in PROMPTS.items():
        assert driver.outputs[rid] == greedy_alone(prompt, 2), rid


def test_a_request_preempted_after_emitting_recomputes_its_output(make_engine, greedy_alone):
    """b emits, is preempted, and must resume from prompt + output without re-emitting."""
    driver = make_engine(num_blocks=4, block_size=2, max_num_batched_tokens=8, max_num_seqs=2)
    driver.add("a", [1, 2, 3], 5)
    driver.add("b", [4, 5, 6], 5)
    driver.run()
    preempted = [rid for record in driver.records for rid in record.preempted]
    assert preempted, "the workload was meant to force a preemption"
    assert driver.engine.stats.preemptions == len(preempted)
    assert driver.outputs["a"] == greedy_alone([1, 2, 3], 5)
    assert driver.outputs["b"] == greedy_alone([4, 5, 6], 5)


@FAST
@given(data=st.data())
def test_tight_pools_finish_every_request_exact(data, draw_workload, play_workload, outputs_alone):
    workload = draw_workload(data, small_pool=True)
    counted = []
    driver = play_workload(workload, lambda d, record: counted.extend(record.preempted))
    outputs_alone(workload, driver)  # play_workload bounds the steps: no livelock
    assert driver.engine.stats.preemptions == len(counted)
    assert driver.engine.stats.used_blocks == 0


def test_nothing_starves_under_a_steady_stream(make_engine, greedy_alone):
    """A new request arrives every step into a pool that forces preemptions: all finish."""
    driver = make_engine(num_blocks=5, block_size=2, max_num_batched_tokens=6, max_num_seqs=3)
    prompts = {f"r{i}": [i % 16, (i * 7) % 16, 3] for i in range(12)}
    pending = list(prompts)
    step = 0
    while pending or driver.engine.has_unfinished_requests():
        if pending:
            rid = pending.pop(0)
            driver.add(rid, prompts[rid], 6)
        driver.step()
        step += 1
        assert step < 500, "a request starved"
    assert driver.engine.stats.preemptions > 0
    for rid, prompt in prompts.items():
        assert driver.outputs[rid] == greedy_alone(prompt, 6), rid


def test_requests_preempted_in_one_step_wait_before_the_queue(make_engine, rows_of, greedy_alone):
    """Blocks of 2, three blocks: a, b, c fill one block each; d waits. a's and b's next
    tokens need blocks: c, then b are preempted, both ahead of d, which was waiting first."""
    prompts = {"a": [1, 2], "b": [3, 4], "c": [5, 6], "d": [7, 8]}
    driver = make_engine(num_blocks=3, block_size=2, max_num_batched_tokens=16, max_num_seqs=3)
    for rid, prompt in prompts.items():
        driver.add(rid, prompt, 3)
    driver.step()
    assert driver.engine.status("d") == "waiting"
    preempted_first = list(driver.step().preempted)
    assert len(preempted_first) >= 1 and "a" not in preempted_first
    admitted: list[str] = []
    driver.run()
    for record in driver.records[2:]:
        admitted += [rid for rid in rows_of(record) if rid in "bcd" and rid not in admitted]
    assert admitted[-1] == "d", f"d overtook a preempted request: {admitted}"
    for rid, prompt in prompts.items():
        assert driver.outputs[rid] == greedy_alone(prompt, 3), rid
