"""PT04 batched_index_select(x [B, T, *F], indices [B, K]) -> [B, K, *F], row by row."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import BAD_VALUE, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import CountedCalls, assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_PT04_MODULE")

pytestmark = [pytest.mark.owner("pt04"), pytest.mark.contract]


def long(rows: list[list[int]], dtype: torch.dtype = torch.long) -> torch.Tensor:
    return torch.tensor(rows, dtype=dtype, device=test_device()).reshape(len(rows), -1)


def loop_select(x: torch.Tensor, indices: list[list[int]]) -> torch.Tensor:
    """[B, K, *F], one row and one index at a time."""
    K = len(indices[0]) if indices else 0
    out = torch.empty(x.shape[0], K, *x.shape[2:], dtype=x.dtype, device=x.device)
    for b, row in enumerate(indices):
        for k, step in enumerate(row):
            out[b, k] = x[b, step]
    return out


def check(x: torch.Tensor, indices: list[list[int]], what: str, index_dtype=torch.long) -> None:
    # the oracle first: the call's writes cannot reach it
    want = loop_select(x, indices)
    got = drill.batched_index_select(x, long(indices, index_dtype))
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)}, want {tuple(want.shape)}"
    assert got.dtype == x.dtype, f"{what}: dtype {got.dtype}, x is {x.dtype}"
    assert torch.equal(got, want), f"{what}: differs from the row loop\n{got}\n{want}"


@pytest.mark.clause("PT04.2", "PT04.4")
def test_each_row_picks_its_own_steps_in_its_own_order():
    x = seeded(3, 6, 4, seed=1)
    check(x, [[5, 0, 2], [1, 1, 4], [3, 2, 1]], "B=3, K=3")


@pytest.mark.clause("PT04.2", "PT04.4")
@pytest.mark.parametrize(
    "features",
    [(), (4,), (2, 3), (2, 1, 3)],
    ids=["rank 2", "rank 3", "rank 4", "rank 5"],
)
def test_every_rank_from_two_to_five(features):
    x = seeded(2, 5, *features, seed=2)
    check(x, [[4, 0], [2, 3]], f"x {tuple(x.shape)}")


@pytest.mark.clause("PT04.2")
@pytest.mark.parametrize("features", [(1,), (1, 3), (3, 1, 1)], ids=str)
def test_singleton_feature_dims_are_kept(features):
    x = seeded(2, 4, *features, seed=3)
    check(x, [[3, 1, 0], [0, 2, 2]], f"x {tuple(x.shape)}")


@pytest.mark.clause("PT04.2")
def test_k_zero_selects_nothing_per_row():
    x = seeded(3, 4, 2, seed=4)
    got = drill.batched_index_select(x, torch.empty(3, 0, dtype=torch.long, device=x.device))
    assert got.shape == (3, 0, 2), f"K = 0: shape {tuple(got.shape)}"


@pytest.mark.clause("PT04.4")
def test_repeated_indices_copy_the_same_step_again():
    x = seeded(2, 5, 3, seed=5)
    check(x, [[1, 2, 3, 4], [4, 4, 0, 4]], "row 1 repeats step 4")


@pytest.mark.clause("PT04.5")
@pytest.mark.parametrize("layout", ["transposed features", "strided time", "expanded batch"])
def test_a_noncontiguous_x_is_selected_by_its_logical_layout(layout):
    views = {
        "transposed features": seeded(2, 3, 6, seed=6).transpose(1, 2),  # [2, 6, 3]
        "strided time": seeded(2, 12, 3, seed=6)[:, ::2],
        "expanded batch": seeded(1, 6, 3, seed=6).expand(2, 6, 3),
    }
    x = views[layout]
    assert not x.is_contiguous()
    check(x, [[0, 5, 2], [4, 1, 1]], layout)


@pytest.mark.clause("PT04.5")
def test_noncontiguous_indices_are_read_by_their_logical_layout():
    x = seeded(2, 5, 3, seed=7)
    indices = long([[4, 0], [1, 3], [2, 2]]).t()  # [2, 3], a transposed view
    assert not indices.is_contiguous()

    # the oracle first: the call's writes cannot reach it
    want = loop_select(x, indices.tolist())
    got = drill.batched_index_select(x, indices)

    assert torch.equal(got, want), "transposed indices"


@pytest.mark.clause("PT04.3")
@pytest.mark.parametrize(
    ("dtype", "index_dtype"),
    [(torch.float32, torch.int32), (torch.bfloat16, torch.int64), (torch.int64, torch.int32)],
    ids=str,
)
def test_the_result_keeps_xs_dtype_and_device(dtype, index_dtype):
    x = (seeded(2, 4, 3, seed=8) * 100).to(dtype)

    # the oracle first: the call's writes cannot reach it
    want = loop_select(x, [[3, 0], [1, 1]])
    got = drill.batched_index_select(x, long([[3, 0], [1, 1]], index_dtype))

    assert got.dtype == dtype and got.device == x.device, f"{got.dtype} on {got.device}"
    assert torch.equal(got, want)


@pytest.mark.clause("PT04.2", "PT04.4")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_small_batch_matches_the_row_loop(data):
    B = data.draw(st.integers(1, 4), label="B")
    T = data.draw(st.integers(1, 6), label="T")
    K = data.draw(st.integers(1, 5), label="K")
    rank = data.draw(st.integers(2, 5), label="rank")
    features = [data.draw(st.integers(1, 3), label=f"F{d}") for d in range(rank - 2)]
    rows = [[data.draw(st.integers(0, T - 1)) for _ in range(K)] for _ in range(B)]
    x = seeded(B, T, *features, seed=data.draw(st.integers(0, 2**16), label="seed"))

    check(x, rows, f"x {tuple(x.shape)}, indices {rows}")


@pytest.mark.clause("PT04.6")
@pytest.mark.parametrize("features", [(3,), (2, 2)], ids=str)
def test_x_is_never_repeated_or_expanded_over_k(features):
    # x repeated or expanded over K (even as a view) holds B*K*T*F elements; x holds
    # B*T*F and the answer B*K*F, each far fewer.
    B, T, K = 2, 50, 6
    x = seeded(B, T, *features, seed=9)
    rows = [[49, 0, 7, 7, 20, 1], [3, 3, 48, 10, 0, 49]]
    indices = long(rows)
    limit = max(x.numel(), B * K * x[0, 0].numel(), B * K)

    # the oracle first: the call's writes cannot reach it
    want = loop_select(x, rows)
    with CountedCalls() as watch:  # the most elements one torch call returned (judge: worker's)
        got = drill.batched_index_select(x, indices)

    assert torch.equal(got, want), "selection at large T"
    assert watch.largest <= limit, f"a tensor of {watch.largest} elements was built (limit {limit})"


@pytest.mark.clause("PT04.1")
def test_the_arguments_bind_by_name_in_the_kits_order():
    x, indices = seeded(2, 4, 2, seed=10), long([[1, 3], [0, 0]])
    assert_binds(drill.batched_index_select, x, indices)
    assert_binds(drill.batched_index_select, indices=indices, x=x)
    by_name = drill.batched_index_select(indices=indices, x=x)
    assert torch.equal(by_name, loop_select(x, [[1, 3], [0, 0]])), "called by name"


# ---- rejection: valid in every respect but one, before any work ----


def rejected(x: torch.Tensor, indices: torch.Tensor, names, values=()) -> None:
    with inputs_untouched(x=x, indices=indices):
        assert_rejects(
            lambda: drill.batched_index_select(x, indices), BAD_VALUE, names, values=values
        )


@pytest.mark.clause("PT04.7")
@pytest.mark.parametrize("row", [1, 2])
def test_a_negative_index_in_a_later_row_is_rejected(row):
    rows = [[0, 1], [2, 3], [1, 1]]
    rows[row][1] = -1
    rejected(seeded(3, 4, 2, seed=11), long(rows), "indices", values=[-1])


@pytest.mark.clause("PT04.8")
@pytest.mark.parametrize("bad", [4, 9], ids=["T", "past T"])
def test_an_index_at_or_past_t_in_a_later_row_is_rejected(bad):
    rejected(seeded(3, 4, 2, seed=12), long([[0, 1], [2, 3], [bad, 0]]), "indices", values=[bad])


@pytest.mark.clause("PT04.9")
@pytest.mark.parametrize("batch", [2, 4], ids=["fewer rows", "more rows"])
def test_indices_for_another_batch_size_are_rejected(batch):
    indices = long([[0, 1]] * batch)
    rejected(seeded(3, 4, 2, seed=13), indices, ("indices", "x"))
