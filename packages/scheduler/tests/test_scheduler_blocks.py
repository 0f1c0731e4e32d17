"""Blocks: admission needs them, finishing returns them, prefix hits reuse them.

``stats``: free + cached + used == num_blocks at every step; a finished request
holds nothing (used_blocks == 0 once all are done); a waiting request is admitted
only when its first chunk fits; a prompt whose full blocks are cached is admitted
with those blocks counted as computed.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gptlab_testkit import boundary_settings
from gptlab_testkit.messages import what_is_wrong

pytestmark = [pytest.mark.owner("block_accounting"), pytest.mark.contract]

# Derandomized, no shrinking (a broken candidate fails fast), no example database.
FAST = boundary_settings(10)


def pool_counts(engine) -> tuple[int, int, int]:
    stats = engine.stats
    return int(stats.free_blocks), int(stats.cached_blocks), int(stats.used_blocks)


@FAST
@given(data=st.data())
def test_blocks_add_up_and_nothing_leaks(data, draw_workload, play_workload):
    workload = draw_workload(data, small_pool=data.draw(st.booleans(), label="small"))

    def check(driver, record) -> None:
        free, cached, used = pool_counts(driver.engine)
        assert min(free, cached, used) >= 0
        assert free + cached + used == workload.num_blocks
        if not driver.engine.has_unfinished_requests():
            assert used == 0, f"{used} blocks held with no request unfinished"

    driver = play_workload(workload, check)
    assert pool_counts(driver.engine)[2] == 0


def test_a_finished_request_holds_no_blocks(make_engine):
    driver = make_engine(num_blocks=8, block_size=2)
    driver.add("a", [1, 2, 3, 4, 5], 4)
    driver.add("b", [6, 7], 9)
    driver.until(lambda d: any("a" in record.finished for record in d.records))
    assert driver.engine.status("b") == "running"
    used = pool_counts(driver.engine)[2]
    # b alone holds ceil(stored / 2) blocks: its prompt and the tokens emitted but the last.
    stored = 2 + len(driver.outputs["b"]) - 1
    assert used == -(-stored // 2)
    with pytest.raises((ValueError, TypeError), match=what_is_wrong("request_id", values=["a"])):
        driver.engine.status("a")


def test_admission_waits_for_a_block(make_engine, rows_of, greedy_alone):
    """a's 13-token prompt takes all four blocks: b waits although budget and slots are left."""
    driver = make_engine(num_blocks=4, block_size=4, max_num_batched_tokens=16, max_num_seqs=4)
    a_prompt = [(5 * i + 2) % 16 for i in range(13)]
    driver.add("a", a_prompt, 3)
    driver.add("b", [3, 3], 3)
    first = driver.step()
    assert rows_of(first) == {"a": (13, "prefill")}
    assert driver.engine.status("b") == "waiting"
    assert pool_counts(driver.engine)[0] == 0
    driver.run()
    assert driver.outputs["a"] == greedy_alone(a_prompt, 3)
    assert driver.outputs["b"] == greedy_alone([3, 3], 3)


@pytest.mark.parametrize(("T", "block_size"), [(11, 4), (8, 4), (9, 2), (5, 1)])
def test_a_repeated_prompt_reuses_its_full_blocks(make_engine, rows_of, T, block_size):
    prompt = [(7 * i + 3) % 16 for i in range(T)]
    driver = make_engine(num_blocks=16, block_size=block_size, max_num_batched_tokens=3)
    driver.add("first", prompt, 2)
    driver.run()
    start = len(driver.records)
    driver.add("again", prompt, 2)
    driver.run()
    prefill = 0
    for record in driver.records[start:]:
        prefill += rows_of(record)["again"][0]  # no output yet: every row is prefill
        if record.emitted:
            break
    assert prefill == T - block_size * ((T - 1) // block_size)
    assert driver.outputs["again"] == driver.outputs["first"]
