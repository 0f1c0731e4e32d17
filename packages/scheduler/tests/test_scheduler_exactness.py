"""Exactness: one model call over a mixed batch gives every request its output alone.

Rows differ in cache length, chunk length and kind (decode next to prefill); each
row's positions start at its own cache length. With greedy decoding the emitted
tokens must equal the model's own ``generate`` over that prompt alone, for any
arrival order, budget, sequence cap and pool size.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gptlab_testkit import boundary_settings

pytestmark = [pytest.mark.owner("mixed_batch"), pytest.mark.contract]

# Derandomized, no shrinking (a broken candidate fails fast), no example database.
FAST = boundary_settings(15)


@FAST
@given(data=st.data())
def test_any_workload_equals_generation_alone(
    data, model_id, draw_workload, play_workload, outputs_alone
):
    workload = draw_workload(data)
    driver = play_workload(workload)
    outputs_alone(workload, driver)


def test_decode_and_prefill_rows_share_one_step(make_engine, greedy_alone, rows_of):
    """A prefill chunk at positions 0..2 shares the call with a decode at position 3."""
    driver = make_engine(max_num_batched_tokens=4, block_size=2)
    driver.add("a", [3, 1, 4], 6)
    driver.step()  # a's prompt: 3 tokens, emits
    driver.add("b", [2, 7, 1, 8, 2, 8, 1, 8, 2], 5)
    mixed = driver.step()
    assert rows_of(mixed) == {"a": (1, "decode"), "b": (3, "prefill")}
    driver.run()
    assert driver.outputs["a"] == greedy_alone([3, 1, 4], 6)
    assert driver.outputs["b"] == greedy_alone([2, 7, 1, 8, 2, 8, 1, 8, 2], 5)


def test_eos_ends_a_request_in_a_batch(make_engine, greedy_alone):
    prompt = [5, 9, 2]
    free_run = greedy_alone(prompt, 8)
    eos = free_run[2]  # the third greedy token: the request must stop at its first EOS
    driver = make_engine(max_num_batched_tokens=5)
    driver.add("other", [1, 2, 3, 4], 8)
    driver.add("eos", prompt, 8, eos_token_id=eos)
    driver.run()
    want = free_run[: free_run.index(eos) + 1]
    assert driver.outputs["eos"] == want
    assert driver.outputs["other"] == greedy_alone([1, 2, 3, 4], 8)


def test_seeded_sampling_does_not_depend_on_the_batch(model_id, make_engine):
    """A request's draws come from its own generator: alone, batched or preempted, equal."""
    prompt = [4, 4, 2, 7]

    def sampled(neighbours: int, num_blocks: int) -> tuple[list[int], int]:
        driver = make_engine(num_blocks=num_blocks, block_size=2, max_num_batched_tokens=6)
        for index in range(neighbours):
            driver.add(f"n{index}", [index + 1, 3, 5], 9, temperature=0.7, seed=100 + index)
        driver.add("s", prompt, 10, temperature=1.3, seed=1234)
        driver.run()
        return driver.outputs["s"], driver.engine.stats.preemptions

    reference, _ = sampled(0, 32)
    assert sampled(3, 32)[0] == reference
    crowded, preemptions = sampled(3, 7)  # 7 blocks of 2 for four requests
    assert preemptions > 0
    assert crowded == reference


def test_seeded_sampling_draws_from_the_request_generator(model_id, model, make_engine):
    """The k-th token is one multinomial draw of softmax(logits / t) with the seed's generator."""
    prompt, temperature, seed, n = [6, 1, 6], 0.9, 77, 7
    driver = make_engine(max_num_batched_tokens=2)
    driver.add("s", prompt, n, temperature=temperature, seed=seed)
    driver.add("t", [2, 2], n, temperature=0.5, seed=5)
    driver.run()
    generator = torch.Generator().manual_seed(seed)
    tokens = list(prompt)
    for _ in range(n):
        ids = torch.tensor([tokens], device=next(model.parameters()).device)
        with torch.no_grad():
            logits = model(ids, torch.arange(len(tokens), device=ids.device)[None]).logits
        probs = torch.softmax(logits[0, -1].float().cpu() / temperature, dim=-1)
        tokens.append(int(torch.multinomial(probs, 1, generator=generator)))
    assert driver.outputs["s"] == tokens[len(prompt) :]


def test_two_requests_with_one_seed_draw_alike(make_engine):
    """Same prompt, temperature and seed in one engine: each its own generator, equal draws."""
    driver = make_engine(max_num_batched_tokens=8)
    for rid in ("x", "y"):
        driver.add(rid, [5, 9, 2], 9, temperature=1.1, seed=2024)
    driver.run()
    assert driver.outputs["x"] == driver.outputs["y"]


def test_seeded_outputs_do_not_depend_on_arrival_order(make_engine):
    def run(order: str) -> dict:
        driver = make_engine(max_num_batched_tokens=5)
        for rid in order:
            driver.add(rid, [ord(rid) % 16, 3], 8, temperature=0.8, seed=ord(rid))
        driver.run()
        return driver.outputs

    forward, backward = run("pqr"), run("rqp")
    assert forward == backward
