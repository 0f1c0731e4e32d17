"""P25 top_k_moe(x, router_logits, experts, k, capacity) -> (out, load)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import assert_close, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P25_MODULE")

pytestmark = [pytest.mark.owner("p25"), pytest.mark.contract]


class Expert:
    """Row-wise and distinct per expert: f_e(h) = h * (e + 1) + e; records every call."""

    def __init__(self, e: int) -> None:
        self.e, self.calls = e, []

    def __call__(self, h: torch.Tensor) -> torch.Tensor:
        self.calls.append(h.detach().clone())
        return h * (self.e + 1) + self.e

    @property
    def rows(self) -> list[torch.Tensor]:
        """Every call that received tokens (a call with zero rows may be skipped)."""
        return [h for h in self.calls if h.shape[0]]


def experts(E: int) -> list[Expert]:
    return [Expert(e) for e in range(E)]


def loop_moe(x, logits, E, k, capacity):
    """Token by token: softmax, top k, renormalise, keep while the expert has room."""
    xs, ls = x.double().tolist(), logits.double().tolist()
    counts, kept = [0] * E, [[] for _ in range(E)]
    out = []
    for n, (row, lrow) in enumerate(zip(xs, ls, strict=True)):
        top = max(lrow)
        p = [math.exp(v - top) for v in lrow]
        p = [v / sum(p) for v in p]
        chosen = sorted(range(E), key=lambda e: -p[e])[:k]
        total = sum(p[e] for e in chosen)
        acc = [0.0] * len(row)
        for e in chosen:
            if counts[e] < capacity:
                counts[e] += 1
                kept[e].append(n)
                acc = [a + p[e] / total * (h * (e + 1) + e) for a, h in zip(acc, row, strict=True)]
        out.append(acc)
    return torch.tensor(out, dtype=torch.float64), counts, kept


def route(x, logits, k, capacity):
    E = logits.shape[1]
    pool = experts(E)
    out, load = drill.top_k_moe(x, logits, pool, k, capacity)
    assert out.shape == x.shape and out.dtype == x.dtype, f"out {out.dtype} {tuple(out.shape)}"
    return out, load, pool


def assert_matches_loop(x, logits, k, capacity):
    out, load, pool = route(x, logits, k, capacity)
    want, counts, kept = loop_moe(x, logits, logits.shape[1], k, capacity)
    assert load.tolist() == counts, f"load {load.tolist()}, want {counts}"
    assert_close(out.double().cpu(), want, "moe output vs loop oracle")
    for e, expert in enumerate(pool):
        got_rows = torch.cat(expert.rows) if expert.rows else x[:0]
        assert len(expert.rows) <= 1, f"expert {e} called {len(expert.rows)} times"
        assert torch.equal(got_rows, x[kept[e]]), f"expert {e} got the wrong tokens or order"


def test_two_experts_per_token_with_room_for_all_match_the_loop_oracle():
    assert_matches_loop(seeded(6, 4, seed=1), seeded(6, 3, seed=2), k=2, capacity=6)


def test_one_expert_per_token_returns_that_experts_output():
    x, logits = seeded(5, 3, seed=3), seeded(5, 4, seed=4)
    out, _, _ = route(x, logits, k=1, capacity=5)
    best = logits.argmax(dim=-1)
    want = x * (best[:, None] + 1) + best[:, None]
    assert_close(out, want.to(out.dtype), "k=1 output vs the chosen expert's output")


def test_tokens_past_an_experts_capacity_are_dropped_in_token_order():
    # Every token's first choice is expert 0; its second is expert 1 or 2.
    x = seeded(4, 3, seed=5)
    logits = torch.tensor(
        [[3.0, 1.0, 0.0], [3.0, 0.0, 1.0], [3.0, 1.0, 0.0], [3.0, 0.0, 1.0]], device=test_device()
    )
    assert_matches_loop(x, logits, k=2, capacity=2)
    _, load, pool = route(x, logits, k=2, capacity=2)
    assert load.tolist() == [2, 2, 2], f"load {load.tolist()}"
    assert torch.equal(pool[0].rows[0], x[:2]), "expert 0 must keep the first two tokens"


def test_no_expert_ever_receives_more_than_its_capacity():
    x, logits = seeded(12, 2, seed=6), seeded(12, 3, seed=7)
    _, load, pool = route(x, logits, k=2, capacity=3)
    for e, expert in enumerate(pool):
        received = sum(h.shape[0] for h in expert.rows)
        assert received <= 3, f"expert {e} received {received} tokens past capacity 3"
        assert int(load[e]) == received, f"load[{e}] = {int(load[e])}, expert got {received}"


def test_zero_capacity_drops_every_token():
    x, logits = seeded(3, 2, seed=8), seeded(3, 2, seed=9)
    out, load, pool = route(x, logits, k=1, capacity=0)
    assert torch.equal(out, torch.zeros_like(out)), "dropped tokens must contribute nothing"
    assert load.tolist() == [0, 0] and not any(expert.rows for expert in pool)


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_any_routing_matches_the_loop_oracle(data):
    N, C = data.draw(st.integers(1, 8), label="N"), data.draw(st.integers(1, 3), label="C")
    E = data.draw(st.integers(1, 4), label="E")
    k = data.draw(st.integers(1, E), label="k")
    capacity = data.draw(st.integers(0, N), label="capacity")
    seed = data.draw(st.integers(0, 2**16), label="seed")
    assert_matches_loop(seeded(N, C, seed=seed), seeded(N, E, seed=seed + 1) * 3, k, capacity)


def test_half_precision_tokens_come_back_in_half_precision():
    x, logits = seeded(4, 3, seed=10, dtype=torch.bfloat16), seeded(4, 3, seed=11)
    out, _, _ = route(x, logits, k=2, capacity=4)
    want, _, _ = loop_moe(x, logits, 3, 2, 4)
    assert_close(out.double().cpu(), want, "bf16 moe", atol=5e-2, rtol=2e-2)


def test_tokens_and_logits_are_only_read():
    x, logits = seeded(5, 3, seed=12), seeded(5, 3, seed=13)
    with inputs_untouched(x=x, router_logits=logits):
        drill.top_k_moe(x, logits, experts(3), 2, 3)


# ---- rejection: before any expert runs ----


def valid_call() -> dict:
    return {"x": seeded(4, 3, seed=14), "router_logits": seeded(4, 3, seed=15),
            "experts": experts(3), "k": 2, "capacity": 2}  # fmt: skip


@pytest.mark.parametrize(
    ("argument", "bad", "named"),
    [
        ("router_logits", lambda: seeded(5, 3, seed=16), ("router_logits", "x")),
        ("experts", lambda: experts(2), ("experts", "router_logits")),
        ("k", lambda: 4, "k"),
        ("k", lambda: 0, "k"),
        ("capacity", lambda: -1, "capacity"),
    ],
    ids=["logits for another N", "too few experts", "k past E", "k zero", "negative capacity"],
)
def test_a_malformed_argument_is_rejected_before_any_expert_runs(argument, bad, named):
    call = {**valid_call(), argument: bad()}
    with inputs_untouched(x=call["x"], router_logits=call["router_logits"]):
        assert_rejects(lambda: drill.top_k_moe(*call.values()), ValueError, named)
    assert not any(expert.calls for expert in call["experts"]), "an expert ran before the check"
