"""PT40 build_expert_dispatch(top_experts, top_weights, experts_per_rank, world_size=None,
capacity=None): routes grouped by (rank, local expert), counts, offsets, weights, inverse.

The oracle walks ranks, then local experts, then tokens and slots in order (a loop), with
the capacity policy applied as it goes; the combine oracle sums each token's kept routes.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import candidate, test_device
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_PT40_MODULE")

pytestmark = [pytest.mark.owner("pt40"), pytest.mark.contract]

KEYS = ("order", "token_ids", "weights", "expert_counts", "send_counts", "send_offsets",
        "inverse")  # fmt: skip


def long(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device())


def weights_for(top_experts: torch.Tensor, seed: int) -> torch.Tensor:
    return seeded(*top_experts.shape, seed=seed).abs() + 0.1


def loop_dispatch(top_experts, top_weights, per_rank, ranks, capacity=None) -> dict:
    """The dispatch by walking (rank, local expert), then (token, slot)."""
    T, K = top_experts.shape
    ids = top_experts.tolist()
    total = top_weights.double().sum(dim=-1).tolist()
    order, weights, expert_counts = [], [], []
    for expert in range(ranks * per_rank):  # rank-major: expert = rank * per_rank + local
        kept = 0
        for t in range(T):
            for k in range(K):
                if ids[t][k] == expert and (capacity is None or kept < capacity):
                    order.append(t * K + k)
                    weights.append(float(top_weights[t, k]) / total[t])
                    kept += 1
        expert_counts.append(kept)
    send = [sum(expert_counts[r * per_rank : (r + 1) * per_rank]) for r in range(ranks)]
    inverse = [[-1] * K for _ in range(T)]
    for position, route in enumerate(order):
        inverse[route // K][route % K] = position
    return {"order": order, "token_ids": [r // K for r in order], "weights": weights,
            "expert_counts": expert_counts, "send_counts": send,
            "send_offsets": [sum(send[:r]) for r in range(ranks)], "inverse": inverse}  # fmt: skip


def loop_combine(x, top_experts, top_weights, capacity=None) -> torch.Tensor:
    """out[t] = sum of normalized w[t, k] * expert_fn(e, x[t]) over kept routes."""
    T, K = top_experts.shape
    out = torch.zeros(x.shape, dtype=torch.float64)
    seen: dict[int, int] = {}
    for t in range(T):
        for k in range(K):
            e = int(top_experts[t, k])
            seen[e] = seen.get(e, 0) + 1
            if capacity is None or seen[e] <= capacity:
                w = float(top_weights[t, k]) / float(top_weights[t].double().sum())
                out[t] += w * expert_fn(e, x[t].double())
    return out


def expert_fn(expert: int, rows: torch.Tensor) -> torch.Tensor:
    return rows * (expert + 1) + expert


def check(top_experts, top_weights, per_rank, ranks, what, capacity=None, pass_ranks=True):
    extra = {"world_size": ranks} if pass_ranks else {}
    if capacity is not None:
        extra["capacity"] = capacity
    got = drill.build_expert_dispatch(top_experts, top_weights, per_rank, **extra)
    want = loop_dispatch(top_experts, top_weights, per_rank, ranks, capacity)
    for key in KEYS:
        assert key in got, f"{what}: no {key!r} in the dispatch ({sorted(got)})"
    for key in ("order", "token_ids", "expert_counts", "send_counts", "send_offsets", "inverse"):
        value = got[key]
        assert value.dtype == torch.int64, f"{what}: {key} is {value.dtype}, want int64"
        assert value.tolist() == want[key], f"{what}: {key} {value.tolist()}, want {want[key]}"
    assert got["weights"].dtype == top_weights.dtype, f"{what}: weights {got['weights'].dtype}"
    want_weights = torch.tensor(want["weights"], dtype=torch.float64)
    assert torch.allclose(got["weights"].double(), want_weights, rtol=1e-5, atol=1e-6), (
        f"{what}: weights {got['weights'].tolist()}, want {want['weights']}"
    )
    return got


def combine(dispatch, x, top_experts) -> torch.Tensor:
    """Run every dispatched row through its expert and scatter back by the inverse map."""
    K = top_experts.shape[1]
    rows = x.double()[dispatch["token_ids"]]
    experts = top_experts.reshape(-1)[dispatch["order"]]
    y = (
        torch.stack([expert_fn(int(e), r) for e, r in zip(experts, rows, strict=True)])
        if len(rows)
        else rows
    )
    out = torch.zeros(x.shape, dtype=torch.float64)
    inverse = dispatch["inverse"]
    for t in range(x.shape[0]):
        for k in range(K):
            where = int(inverse[t, k])
            if where >= 0:
                out[t] += float(dispatch["weights"][where]) * y[where]
    return out


@pytest.mark.clause("PT40.2", "PT40.3", "PT40.4", "PT40.5")
def test_routes_are_grouped_by_rank_then_local_expert():
    top = long([[3, 0], [1, 2], [2, 3], [0, 1], [3, 2]])
    check(top, weights_for(top, 1), 2, 2, "4 experts on 2 ranks")


@pytest.mark.clause("PT40.4")
def test_equal_expert_ids_keep_token_then_slot_order():
    top = long([[1, 0], [0, 1], [1, 0], [1, 1], [0, 1]])
    check(top, weights_for(top, 2), 1, 2, "many routes to each expert")


@pytest.mark.clause("PT40.5")
def test_zero_token_experts_and_ranks_get_zero_counts():
    top = long([[5, 0], [0, 5], [5, 0]])  # experts 1-4 and 6-7 get nothing; rank 1 none
    check(top, weights_for(top, 3), 2, 4, "experts 0 and 5 only, 8 experts on 4 ranks")


@pytest.mark.clause("PT40.5")
@pytest.mark.parametrize("per_rank", [1, 3])
def test_world_size_one(per_rank):
    top = long([[0, per_rank - 1], [per_rank - 1, 0]])
    got = check(top, weights_for(top, 4), per_rank, 1, f"one rank, {per_rank} experts")
    assert got["send_counts"].tolist() == [4] and got["send_offsets"].tolist() == [0]


@pytest.mark.clause("PT40.5")
def test_without_world_size_the_ranks_are_the_fewest_that_hold_every_expert():
    top = long([[4, 0], [1, 4]])
    check(top, weights_for(top, 5), 2, 3, "experts up to 4, 2 a rank", pass_ranks=False)


@pytest.mark.clause("PT40.5")
@pytest.mark.parametrize(
    ("ids", "per_rank", "ranks"),
    [([[1, 0], [0, 1]], 2, 1), ([[3, 0], [2, 1]], 2, 2), ([[0], [2]], 1, 3)],
    ids=["every expert on rank 0", "the last expert of rank 1", "one expert a rank"],
)
def test_the_default_world_size_is_exactly_the_ranks_needed(ids, per_rank, ranks):
    top = long(ids)
    check(top, weights_for(top, 15), per_rank, ranks, f"ids {ids}", pass_ranks=False)


@pytest.mark.clause("PT40.2", "PT40.5")
def test_no_tokens_dispatch_nothing_on_one_rank():
    top = torch.zeros(0, 2, dtype=torch.long, device=test_device())
    got = check(top, torch.zeros(0, 2, device=test_device()), 1, 1, "T = 0", pass_ranks=False)
    assert got["inverse"].shape == (0, 2), f"inverse {tuple(got['inverse'].shape)}"


@pytest.mark.clause("PT40.6")
@pytest.mark.parametrize("capacity", [None, 1, 2])
def test_every_contribution_returns_to_its_token_and_slot(capacity):
    top = long([[2, 0, 1], [0, 2, 3], [3, 3, 0], [1, 0, 2]])
    top_weights = weights_for(top, 6)
    got = check(top, top_weights, 2, 2, f"capacity {capacity}", capacity=capacity)
    T, K = top.shape
    for t in range(T):
        for k in range(K):
            where = int(got["inverse"][t, k])
            if where >= 0:
                assert int(got["order"][where]) == t * K + k, f"route ({t}, {k}) lands elsewhere"
                assert int(got["token_ids"][where]) == t
    x = seeded(T, 3, seed=7)
    assert torch.allclose(combine(got, x, top), loop_combine(x, top, top_weights, capacity))


@pytest.mark.clause("PT40.7")
def test_the_same_expert_in_several_slots_sends_each_slot():
    top = long([[1, 1, 0], [2, 1, 1]])
    top_weights = weights_for(top, 8)
    got = check(top, top_weights, 2, 2, "token 0 routes twice to expert 1")
    x = seeded(2, 4, seed=9)
    assert torch.allclose(combine(got, x, top), loop_combine(x, top, top_weights))


@pytest.mark.clause("PT40.8")
@pytest.mark.parametrize("capacity", [0, 1, 2, 5])
def test_capacity_keeps_each_experts_first_routes_in_token_order(capacity):
    top = long([[1, 0], [1, 2], [0, 1], [1, 0], [2, 1]])
    top_weights = weights_for(top, 10)
    got = check(top, top_weights, 3, 1, f"capacity {capacity}", capacity=capacity)
    x = seeded(5, 2, seed=11)
    assert torch.allclose(combine(got, x, top), loop_combine(x, top, top_weights, capacity))


@pytest.mark.clause("PT40.3", "PT40.9")
def test_weights_are_normalized_per_token_before_any_drop():
    top = long([[0, 1], [0, 1], [0, 1]])
    top_weights = torch.tensor([[1.0, 3.0], [2.0, 2.0], [5.0, 15.0]], device=test_device())
    check(top, top_weights, 1, 2, "capacity 1 drops rows 1 and 2's routes", capacity=1)
    check(top, top_weights.double(), 2, 1, "fp64 weights")


@pytest.mark.clause("PT40.4", "PT40.5", "PT40.6", "PT40.8")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_small_routing(data):
    ranks = data.draw(st.integers(1, 3), label="R")
    per_rank = data.draw(st.integers(1, 3), label="experts_per_rank")
    T, K = data.draw(st.integers(0, 6), label="T"), data.draw(st.integers(1, 3), label="K")
    ids = [[data.draw(st.integers(0, ranks * per_rank - 1)) for _ in range(K)] for _ in range(T)]
    capacity = data.draw(st.none() | st.integers(0, 3), label="capacity")
    top = long(ids).reshape(T, K)
    top_weights = weights_for(top, data.draw(st.integers(0, 2**16), label="seed"))
    got = check(top, top_weights, per_rank, ranks, f"ids {ids}, capacity {capacity}",
                capacity=capacity)  # fmt: skip
    x = seeded(T, 2, seed=12)
    assert torch.allclose(combine(got, x, top), loop_combine(x, top, top_weights, capacity))


@pytest.mark.clause("PT40.11")
def test_the_routing_is_only_read():
    top = long([[1, 0], [0, 1]])
    top_weights = weights_for(top, 13)
    with inputs_untouched(top_experts=top, top_weights=top_weights):
        drill.build_expert_dispatch(top, top_weights, 1, 2, 1)


@pytest.mark.clause("PT40.1")
def test_the_arguments_bind_by_name_in_the_kits_order():
    top = long([[1, 0], [0, 1]])
    top_weights = weights_for(top, 14)
    assert_binds(drill.build_expert_dispatch, top, top_weights, 1)
    assert_binds(drill.build_expert_dispatch, top, top_weights, 1, 2, 1)
    assert_binds(drill.build_expert_dispatch, experts_per_rank=1, top_weights=top_weights,
                 top_experts=top, world_size=2, capacity=1)  # fmt: skip
    got = drill.build_expert_dispatch(experts_per_rank=1, top_weights=top_weights, top_experts=top)
    assert got["order"].tolist() == loop_dispatch(top, top_weights, 1, 2)["order"]
