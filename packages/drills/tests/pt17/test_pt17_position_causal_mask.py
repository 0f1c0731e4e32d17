"""PT17 position_causal_mask(query_positions, key_positions, key_valid) -> bool [B, 1, Tq, Tk]."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.overrides import TorchFunctionMode

from gptlab_testkit import assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched

drill = candidate("DRILL_PT17_MODULE")

pytestmark = [pytest.mark.owner("pt17"), pytest.mark.contract]


def long(rows: list[list[int]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long, device=test_device())


def flags(rows: list[list[int]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.bool, device=test_device())


def loop_mask(query_positions, key_positions, key_valid) -> torch.Tensor:
    """[B, 1, Tq, Tk] bool, one entry at a time."""
    qp, kp, kv = query_positions.tolist(), key_positions.tolist(), key_valid.tolist()
    B, Tq, Tk = len(qp), len(qp[0]), len(kp[0])
    out = torch.zeros(B, 1, Tq, Tk, dtype=torch.bool)
    for b in range(B):
        for i in range(Tq):
            for j in range(Tk):
                out[b, 0, i, j] = kv[b][j] and kp[b][j] <= qp[b][i]
    return out.to(test_device())


def check(query_positions, key_positions, key_valid, what: str) -> None:
    got = drill.position_causal_mask(query_positions, key_positions, key_valid)
    want = loop_mask(query_positions, key_positions, key_valid)
    assert got.dtype == torch.bool, f"{what}: mask dtype {got.dtype}, expected bool"
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)}, want {tuple(want.shape)}"
    assert torch.equal(got, want), f"{what}: mask differs from the loop oracle\n{got}\n{want}"


def test_prefill_from_position_zero_is_the_lower_triangle():
    positions = long([[0, 1, 2, 3], [0, 1, 2, 3]])
    valid = flags([[1, 1, 1, 1], [1, 1, 1, 1]])

    got = drill.position_causal_mask(positions, positions, valid)

    triangle = torch.ones(4, 4, dtype=torch.bool, device=test_device()).tril()
    assert torch.equal(got, triangle.expand(2, 1, 4, 4)), f"prefill mask\n{got}"


def test_one_token_decode_sees_every_valid_key_up_to_its_position():
    # Row 1's cache holds 3 valid keys; its slots past them are capacity (invalid).
    query = long([[5], [3]])
    keys = long([[0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 0, 0]])
    valid = flags([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]])

    check(query, keys, valid, "one-token decode")


def test_a_chunk_after_a_cache_sees_the_cache_and_its_own_past():
    # 3 new queries at positions 4..6 over 7 keys (4 cached + the chunk): a rectangle,
    # not the top-left triangle of a 3 x 7 matrix.
    query = long([[4, 5, 6], [4, 5, 6]])
    keys = long([[0, 1, 2, 3, 4, 5, 6], [0, 1, 2, 3, 4, 5, 6]])
    valid = flags([[1] * 7, [1] * 7])

    check(query, keys, valid, "chunked decode, Tq=3, Tk=7")


def test_left_padding_is_never_attended():
    # Row 1 is left-padded by 2; its padding keys hold position 0 like its first token.
    query = long([[0, 1, 2, 3, 4], [0, 0, 0, 1, 2]])
    keys = query.clone()
    valid = flags([[1, 1, 1, 1, 1], [0, 0, 1, 1, 1]])

    check(query, keys, valid, "left-padded prefill")


def test_rows_may_start_at_different_nonzero_positions():
    query = long([[102, 103], [9, 10]])
    keys = long([[99, 100, 101, 102, 103], [7, 8, 9, 10, 0]])
    valid = flags([[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]])

    check(query, keys, valid, "nonzero origins, Tq=2, Tk=5")


def test_padding_keys_may_hold_any_position():
    # Row 1's invalid keys hold large and decreasing positions: ignored, never rejected.
    query = long([[3, 4], [3, 4]])
    keys = long([[0, 1, 2, 3, 4, 5], [50, 40, 2, 3, 4, 1]])
    valid = flags([[1, 1, 1, 1, 1, 0], [0, 0, 1, 1, 1, 0]])

    check(query, keys, valid, "arbitrary positions on invalid keys")


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_padded_chunk_matches_the_loop_oracle(data):
    B = data.draw(st.integers(1, 3), label="B")
    Tk = data.draw(st.integers(1, 7), label="Tk")
    Tq = data.draw(st.integers(1, Tk), label="Tq")
    query_rows, key_rows, valid_rows = [], [], []
    for b in range(B):
        start = data.draw(st.integers(0, 50), label=f"origin[{b}]")
        pad = data.draw(st.integers(0, Tk - Tq), label=f"left padding[{b}]")
        real = list(range(start, start + Tk - pad))  # keys' positions, last Tq are queries
        key_rows.append([0] * pad + real)
        valid_rows.append([0] * pad + [1] * len(real))
        query_rows.append(real[-Tq:])

    check(long(query_rows), long(key_rows), flags(valid_rows), f"B={B}, Tq={Tq}, Tk={Tk}")


class _LargestTensor(TorchFunctionMode):
    """Records the most elements any torch call returned inside the block."""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        for value in result if isinstance(result, tuple) else (result,):
            if isinstance(value, torch.Tensor):
                self.largest = max(self.largest, value.numel())
        return result


@pytest.mark.parametrize(("Tq", "origin"), [(1, 3000), (3, 2500)])
def test_no_square_mask_over_the_largest_position_is_built(Tq, origin):
    # Keys at positions origin..origin+3, queries the last Tq of them. A square mask
    # over positions would hold millions of entries; the answer holds B * Tq * Tk.
    Tk = 4
    keys = long([[origin + j for j in range(Tk)]] * 2)
    query = keys[:, Tk - Tq :].clone()
    valid = flags([[1] * Tk, [0] + [1] * (Tk - 1)])
    limit = 2 * (2 * Tq * Tk) + 2 * (origin + Tk)  # the mask, or one position index

    with _LargestTensor() as watch:
        got = drill.position_causal_mask(query, keys, valid)

    assert torch.equal(got, loop_mask(query, keys, valid)), "mask at large positions"
    assert watch.largest <= limit, f"a tensor of {watch.largest} elements was built (limit {limit})"


def test_inputs_are_not_written():
    query, keys = long([[2, 3], [1, 2]]), long([[0, 1, 2, 3], [0, 1, 2, 0]])
    valid = flags([[1, 1, 1, 1], [1, 1, 1, 0]])

    with inputs_untouched(query_positions=query, key_positions=keys, key_valid=valid):
        drill.position_causal_mask(query, keys, valid)


# ---- rejection: valid in every respect but one, before any work ----


def valid_call() -> dict[str, torch.Tensor]:
    return {
        "query_positions": long([[3, 4], [3, 4]]),
        "key_positions": long([[0, 1, 2, 3, 4], [0, 1, 2, 3, 4]]),
        "key_valid": flags([[1, 1, 1, 1, 1], [0, 1, 1, 1, 1]]),
    }


def test_decreasing_query_positions_in_a_row_are_rejected():
    call = {**valid_call(), "query_positions": long([[3, 4], [4, 3]])}
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.position_causal_mask(**call), ValueError, "query_positions")


def test_decreasing_positions_among_valid_keys_are_rejected():
    call = {**valid_call(), "key_positions": long([[0, 1, 2, 3, 4], [0, 1, 3, 2, 4]])}
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.position_causal_mask(**call), ValueError, "key_positions")


def test_key_valid_shaped_unlike_key_positions_is_rejected():
    call = {**valid_call(), "key_valid": flags([[1, 1, 1, 1], [1, 1, 1, 1]])}
    with inputs_untouched(**call):
        assert_rejects(
            lambda: drill.position_causal_mask(**call), ValueError, ("key_valid", "key_positions")
        )


def test_query_and_key_batches_of_different_sizes_are_rejected():
    call = {**valid_call(), "query_positions": long([[3, 4], [3, 4], [3, 4]])}
    with inputs_untouched(**call):
        assert_rejects(
            lambda: drill.position_causal_mask(**call),
            ValueError,
            ("query_positions", "key_positions"),
        )
