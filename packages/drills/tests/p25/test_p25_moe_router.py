"""P25 top_k_moe(x, router_logits, experts, k, capacity) -> (out, load)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import (
    BAD_VALUE,
    WRONG_KIND,
    assert_close,
    assert_rejects,
    candidate,
    shares_storage,
    test_device,
)
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_P25_MODULE")

pytestmark = [pytest.mark.owner("p25")]  # each test says contract or extension


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
    # the oracle first: the call's writes cannot reach it
    want, counts, kept = loop_moe(x, logits, logits.shape[1], k, capacity)
    x_given = x.clone()
    out, load, pool = route(x, logits, k, capacity)
    assert load.tolist() == counts, f"load {load.tolist()}, want {counts}"
    assert_close(out.double().cpu(), want, "moe output vs loop oracle")
    for e, expert in enumerate(pool):
        got_rows = torch.cat(expert.rows) if expert.rows else x_given[:0]
        assert len(expert.rows) <= 1, f"expert {e} called {len(expert.rows)} times"
        assert torch.equal(got_rows, x_given[kept[e]]), f"expert {e} got the wrong tokens or order"


@pytest.mark.contract
@pytest.mark.clause("P25.1", "P25.4", "P25.8")
def test_two_experts_per_token_with_room_for_all_match_the_loop_oracle():
    assert_matches_loop(seeded(6, 4, seed=1), seeded(6, 3, seed=2), k=2, capacity=6)


@pytest.mark.contract
@pytest.mark.clause("P25.1")
def test_the_signature_takes_all_five_arguments_positionally():
    x, logits = seeded(4, 3, seed=5), seeded(4, 3, seed=6)

    assert_binds(drill.top_k_moe, x, logits, experts(3), 2, 4)


@pytest.mark.contract
@pytest.mark.clause("P25.4")
def test_one_expert_per_token_returns_that_experts_output():
    x, logits = seeded(5, 3, seed=3), seeded(5, 4, seed=4)
    out, _, _ = route(x, logits, k=1, capacity=5)
    best = logits.argmax(dim=-1)
    want = x * (best[:, None] + 1) + best[:, None]
    assert_close(out, want.to(out.dtype), "k=1 output vs the chosen expert's output")


@pytest.mark.contract
@pytest.mark.clause("P25.5", "P25.6", "P25.8")
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


@pytest.mark.contract
@pytest.mark.clause("P25.7", "P25.8")
def test_no_expert_ever_receives_more_than_its_capacity():
    x, logits = seeded(12, 2, seed=6), seeded(12, 3, seed=7)
    _, load, pool = route(x, logits, k=2, capacity=3)
    for e, expert in enumerate(pool):
        received = sum(h.shape[0] for h in expert.rows)
        assert received <= 3, f"expert {e} received {received} tokens past capacity 3"
        assert int(load[e]) == received, f"load[{e}] = {int(load[e])}, expert got {received}"


@pytest.mark.contract
@pytest.mark.clause("P25.6", "P25.7")
def test_zero_capacity_drops_every_token():
    x, logits = seeded(3, 2, seed=8), seeded(3, 2, seed=9)
    out, load, pool = route(x, logits, k=1, capacity=0)
    assert torch.equal(out, torch.zeros_like(out)), "dropped tokens must contribute nothing"
    assert load.tolist() == [0, 0] and not any(expert.rows for expert in pool)


@pytest.mark.contract
@pytest.mark.clause("P25.4", "P25.5", "P25.6", "P25.7", "P25.8")
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_any_routing_matches_the_loop_oracle(data):
    N, C = data.draw(st.integers(1, 8), label="N"), data.draw(st.integers(1, 3), label="C")
    E = data.draw(st.integers(1, 4), label="E")
    k = data.draw(st.integers(1, E), label="k")
    capacity = data.draw(st.integers(0, N), label="capacity")
    seed = data.draw(st.integers(0, 2**16), label="seed")
    assert_matches_loop(seeded(N, C, seed=seed), seeded(N, E, seed=seed + 1) * 3, k, capacity)


@pytest.mark.contract
@pytest.mark.clause("P25.3", "P25.4")
def test_half_precision_tokens_come_back_in_half_precision():
    x, logits = seeded(4, 3, seed=10, dtype=torch.bfloat16), seeded(4, 3, seed=11)
    # the oracle first: the call's writes cannot reach it
    want, _, _ = loop_moe(x, logits, 3, 2, 4)
    out, _, _ = route(x, logits, k=2, capacity=4)
    assert_close(out.double().cpu(), want, "bf16 moe", atol=5e-2, rtol=2e-2)


@pytest.mark.contract
@pytest.mark.clause("P25.13")
def test_tokens_and_logits_are_only_read():
    x, logits = seeded(5, 3, seed=12), seeded(5, 3, seed=13)
    with inputs_untouched(x=x, router_logits=logits):
        drill.top_k_moe(x, logits, experts(3), 2, 3)


@pytest.mark.contract
@pytest.mark.clause("P25.2", "P25.3")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_out_is_n_by_c_in_xs_dtype_and_load_is_int64_per_expert(dtype):
    x, logits = seeded(5, 3, seed=20, dtype=dtype), seeded(5, 4, seed=21)
    out, load = drill.top_k_moe(x, logits, experts(4), 2, 5)
    assert isinstance(out, torch.Tensor) and tuple(out.shape) == (5, 3), f"out {out.shape}"
    assert out.dtype == dtype, f"out is {out.dtype}, x is {dtype}"
    assert isinstance(load, torch.Tensor) and tuple(load.shape) == (4,), f"load {load}"
    assert load.dtype == torch.int64, f"load is {load.dtype}, want int64"


@pytest.mark.contract
@pytest.mark.clause("P25.5", "P25.7", "P25.8")
def test_capacity_goes_by_token_order_not_by_choice_rank():
    # Token 0 picks expert 0 as its second choice, token 1 as its first; capacity 1: token
    # order gives expert 0 to token 0 (serving first choices first would give it to token 1).
    x = seeded(3, 2, seed=22)
    logits = torch.tensor(
        [[2.0, 3.0, -1.0], [3.0, -1.0, 2.0], [-1.0, 3.0, 2.0]], device=test_device()
    )
    assert_matches_loop(x, logits, k=2, capacity=1)
    _, load, pool = route(x, logits, k=2, capacity=1)
    assert torch.equal(pool[0].rows[0], x[:1]), "expert 0 must keep token 0, the first to choose it"
    assert load.tolist() == [1, 1, 1], f"load {load.tolist()}"


@pytest.mark.contract
@pytest.mark.clause("P25.6")
def test_a_dropped_assignment_adds_nothing_and_the_kept_weight_is_not_renormalised():
    # Token 0 chooses experts 0 and 1, token 1 experts 0 and 2; capacity 1: expert 0 is full
    # after token 0, so token 1 keeps expert 2 alone, at its top-k weight (not scaled to 1).
    x = seeded(2, 3, seed=23)
    logits = torch.tensor([[2.0, 1.0, -4.0], [2.0, -4.0, 1.0]], device=test_device())
    out, load, _ = route(x, logits, k=2, capacity=1)
    p = torch.softmax(logits[1].double(), dim=-1)
    w2 = p[2] / (p[0] + p[2])  # token 1's weight on expert 2 over its two choices
    want = w2 * (x[1].double() * 3 + 2)  # f_2(h) = 3h + 2; expert 0's share is dropped
    assert load.tolist() == [1, 1, 1], f"load {load.tolist()}"
    assert_close(
        out[1].double().cpu(), want.cpu(), "token 1: only expert 2, weight not renormalised"
    )
    assert_matches_loop(x, logits, k=2, capacity=1)


@pytest.mark.contract
@pytest.mark.clause("P25.13")
def test_out_is_a_new_tensor_even_when_every_token_is_dropped():
    x, logits = seeded(3, 2, seed=24), seeded(3, 2, seed=25)
    out, load = drill.top_k_moe(x, logits, experts(2), 1, 0)
    for name, source in ("x", x), ("router_logits", logits):
        for returned, result in ("out", out), ("load", load):
            # judged, the storages are the worker's, as it reported them (an advisory clause)
            assert not shares_storage(result, source), f"{returned} shares storage with {name}"


# ---- rejection: before any expert runs, nothing written ----


def valid_call() -> dict:
    return {"x": seeded(4, 3, seed=14), "router_logits": seeded(4, 3, seed=15),
            "experts": experts(3), "k": 2, "capacity": 2}  # fmt: skip


def assert_refused(argument, bad, errors, named, values=()):
    call = {**valid_call(), argument: bad}
    tensors = {n: call[n] for n in ("x", "router_logits") if isinstance(call[n], torch.Tensor)}
    with inputs_untouched(**tensors):
        assert_rejects(lambda: drill.top_k_moe(*call.values()), errors, named, values=values)
    pool = call["experts"] if isinstance(call["experts"], list) else []
    assert not any(getattr(e, "calls", None) for e in pool), "an expert ran before the check"


# ---- extension: the reference's doors past the contract ----


def logits_with(row: int, value: float) -> torch.Tensor:
    """Valid logits but one row: NaN or +inf at one place, or every entry -inf."""
    logits = seeded(4, 3, seed=15)
    if value == -math.inf:
        logits[row] = value
    else:
        logits[row, 1] = value
    return logits


class Reshaping(Expert):
    def __call__(self, h: torch.Tensor) -> torch.Tensor:
        super().__call__(h)
        return h[:, :1]


@pytest.mark.extension
@pytest.mark.clause("P25.15")
@pytest.mark.parametrize(
    ("argument", "bad", "errors"),
    [
        ("x", lambda: seeded(4, 3, seed=14).to(torch.int64), WRONG_KIND),
        ("x", lambda: seeded(4, 3, 1, seed=14), BAD_VALUE),
        ("x", lambda: torch.empty(4, 3, device="meta"), BAD_VALUE),
        ("x", lambda: [[0.0] * 3] * 4, WRONG_KIND),
        ("router_logits", lambda: seeded(4, 3, seed=15).to(torch.int64), WRONG_KIND),
        ("router_logits", lambda: torch.empty(4, 3, device="meta"), BAD_VALUE),
        ("router_logits", lambda: logits_with(2, math.nan), BAD_VALUE),
        ("router_logits", lambda: logits_with(1, math.inf), BAD_VALUE),
        ("router_logits", lambda: logits_with(3, -math.inf), BAD_VALUE),
        ("experts", lambda: (Expert(e) for e in range(3)), WRONG_KIND),
        ("experts", lambda: [Expert(0), Expert(1), "expert"], WRONG_KIND),
    ],
    ids=["int x", "3-D x", "meta x", "list x", "int logits", "meta logits", "NaN row 2",
         "+inf row 1", "all -inf row 3", "a generator of experts", "a non-callable expert"],
)  # fmt: skip
def test_the_reference_rejects_inputs_the_contract_leaves_undefined(argument, bad, errors):
    value = bad()
    if isinstance(value, torch.Tensor) and value.device.type != "meta":
        value = value.to(test_device())
    assert_refused(argument, value, errors, argument)


@pytest.mark.extension
@pytest.mark.clause("P25.15")
def test_the_reference_names_an_expert_that_returns_another_shape():
    call = {**valid_call(), "experts": [Expert(0), Reshaping(1), Expert(2)]}
    assert_rejects(lambda: drill.top_k_moe(*call.values()), BAD_VALUE, "experts")


@pytest.mark.extension
@pytest.mark.clause("P25.4")
def test_minus_infinity_rules_an_expert_out():
    x = seeded(2, 2, seed=26)
    logits = torch.tensor([[0.0, -math.inf, 1.0], [-math.inf, 2.0, 0.5]], device=test_device())
    assert_matches_loop(x, logits, k=2, capacity=2)
