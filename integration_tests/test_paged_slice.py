"""The slice's paged route: two requests share a prompt prefix through one block pool.

Request A prefills by chunks (the chunked_prefill candidate) and its K/V go into
the pool. Request B shares A's first two blocks at the same origin: admission
reuses them (no copy), B's uncached rest is chunk-prefilled against the blocks
gathered by `model_inputs`, and its K/V are appended. Then both decode together,
one batched step per token, through the pool. Every logit, stored K/V and token
must equal recomputing each request from scratch. Each mechanism is loaded
through its variable, so any one of them can be a candidate.
"""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, assert_past_close, candidate, test_device
from gptlab_testkit.kv_storage import new_token_kv

pytestmark = [pytest.mark.contract, pytest.mark.owner("slice_composition")]

paged_kv = candidate("PAGED_KV_MODULE")
chunked = candidate("CHUNKED_PREFILL_MODULE")

BLOCK = 4
ORIGIN = 1  # a nonzero absolute start: positions are never just 0..T-1
SHARED = [3, 1, 4, 1, 5, 9, 2, 6]  # two complete blocks
PROMPTS = {"a": [*SHARED, 5, 3], "b": [*SHARED, 8, 9, 7]}
NEW_TOKENS = 3  # last fed position: ORIGIN + 11 + 1 = 13 < 16
DEVICE = test_device()


def ids(tokens: list[int]) -> torch.Tensor:
    return torch.tensor([tokens], dtype=torch.long, device=DEVICE)


def positions(start: int, count: int) -> torch.Tensor:
    return torch.arange(start, start + count, dtype=torch.long, device=DEVICE).unsqueeze(0)


def full(model, tokens: list[int]):
    """The oracle: one uncached forward over the whole sequence."""
    with torch.no_grad():
        return model(ids(tokens), positions(ORIGIN, len(tokens)), use_cache=True)


def prefill(model, pool, rid: str) -> torch.Tensor:
    """Admit a prompt, chunk-prefill what the pool does not hold, store its K/V."""
    prompt = PROMPTS[rid]
    namespace = paged_kv.PagedNamespace("slice-model", "paged")
    reused = pool.admit(rid, prompt, namespace, ORIGIN)
    past, lengths, starts = pool.model_inputs([rid])
    rest = prompt[reused:]
    with torch.no_grad():
        out = chunked.chunked_prefill(
            model,
            ids(rest),
            positions(ORIGIN + reused, len(rest)),
            2,
            past_key_values=past,
            cache_lengths=lengths,
            cache_start_positions=starts,
        )
    delta = new_token_kv(out.past_key_values, [reused], len(rest))
    pool.append([rid], ids(rest), positions(ORIGIN + reused, len(rest)), delta)
    return out.logits


@pytest.fixture
def served(model_module):
    """A model and a pool holding both prompts, B having reused A's two blocks."""
    model = model_module.make_test_model().to(DEVICE)
    probe = full(model, [0]).past_key_values
    pool = paged_kv.PagedKVCache(
        len(probe), probe[0][0].shape[1], probe[0][0].shape[3], 8, BLOCK, device=DEVICE
    )
    logits = {rid: prefill(model, pool, rid) for rid in ("a", "b")}
    return model, pool, logits


def test_request_b_reuses_a_prefix_blocks_and_prefills_exactly(served) -> None:
    model, pool, logits = served
    assert pool.block_table("b")[:2] == pool.block_table("a")[:2]
    assert pool.block_table("b")[2] != pool.block_table("a")[2]
    for rid, reused in (("a", 0), ("b", len(SHARED))):
        oracle = full(model, PROMPTS[rid])
        assert_close(logits[rid], oracle.logits[:, reused:], f"{rid} prefill logits")
        past, lengths, _ = pool.model_inputs([rid])
        assert lengths.tolist() == [len(PROMPTS[rid])]
        assert_past_close(past, oracle.past_key_values, f"{rid} K/V in the pool")


def test_batched_decode_through_the_pool_matches_generate_and_recomputation(served) -> None:
    model, pool, logits = served
    rids = ["a", "b"]
    tokens = {rid: list(PROMPTS[rid]) for rid in rids}
    last = torch.cat([logits[rid][:, -1] for rid in rids])  # [2, V]
    for step in range(NEW_TOKENS):
        chosen = last.argmax(dim=-1)
        for row, rid in enumerate(rids):
            tokens[rid].append(int(chosen[row]))
        if step == NEW_TOKENS - 1:
            break
        fed = chosen[:, None]
        at = torch.tensor([[ORIGIN + len(tokens[r]) - 1] for r in rids], device=DEVICE)
        past, lengths, starts = pool.model_inputs(rids)
        with torch.no_grad():
            out = model(fed, at, past, lengths, starts, use_cache=True)
        pool.append(rids, fed, at, new_token_kv(out.past_key_values, lengths, 1))
        for row, rid in enumerate(rids):
            assert_close(out.logits[row, -1], full(model, tokens[rid]).logits[0, -1], f"{rid} step")
        last = out.logits[:, -1]

    for rid in rids:
        prompt = PROMPTS[rid]
        with torch.no_grad():
            expected = model.generate(ids(prompt), positions(ORIGIN, len(prompt)), NEW_TOKENS)
        assert tokens[rid] == expected[0].tolist(), f"{rid} greedy tokens"
        # The pool holds the prompt and every generated token but the last (never fed).
        past, _, _ = pool.model_inputs([rid])
        assert_past_close(past, full(model, tokens[rid][:-1]).past_key_values, f"{rid} pool")


def test_freed_requests_leave_their_full_blocks_for_a_third(served) -> None:
    model, pool, _ = served
    pool.free("a")
    pool.free("b")

    reused = pool.admit("c", [*SHARED, 7], paged_kv.PagedNamespace("slice-model", "paged"), ORIGIN)

    assert reused == len(SHARED)
    past, _, _ = pool.model_inputs(["c"])
    assert_past_close(past, full(model, SHARED).past_key_values, "reused blocks")
