"""PT17 position_causal_mask(query_positions, key_positions, key_valid) -> bool [B, 1, Tq, Tk]."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import CountedCalls, inputs_untouched

drill = candidate("DRILL_PT17_MODULE")

pytestmark = [pytest.mark.owner("pt17")]  # each test says contract or extension


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


@pytest.mark.contract
@pytest.mark.clause("PT17.1", "PT17.2", "PT17.4", "PT17.5")
def test_prefill_from_position_zero_is_the_lower_triangle():
    positions = long([[0, 1, 2, 3], [0, 1, 2, 3]])
    valid = flags([[1, 1, 1, 1], [1, 1, 1, 1]])

    got = drill.position_causal_mask(positions, positions, valid)

    triangle = torch.ones(4, 4, dtype=torch.bool, device=test_device()).tril()
    assert torch.equal(got, triangle.expand(2, 1, 4, 4)), f"prefill mask\n{got}"


@pytest.mark.contract
@pytest.mark.clause("PT17.3", "PT17.4", "PT17.5")
def test_one_token_decode_sees_every_valid_key_up_to_its_position():
    # Row 1's cache holds 3 valid keys; its slots past them are capacity (invalid).
    query = long([[5], [3]])
    keys = long([[0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 0, 0]])
    valid = flags([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]])

    check(query, keys, valid, "one-token decode")


@pytest.mark.contract
@pytest.mark.clause("PT17.4", "PT17.5")
def test_a_chunk_after_a_cache_sees_the_cache_and_its_own_past():
    # 3 new queries at positions 4..6 over 7 keys (4 cached + the chunk): a rectangle,
    # not the top-left triangle of a 3 x 7 matrix.
    query = long([[4, 5, 6], [4, 5, 6]])
    keys = long([[0, 1, 2, 3, 4, 5, 6], [0, 1, 2, 3, 4, 5, 6]])
    valid = flags([[1] * 7, [1] * 7])

    check(query, keys, valid, "chunked decode, Tq=3, Tk=7")


@pytest.mark.contract
@pytest.mark.clause("PT17.4", "PT17.5")
def test_left_padding_is_never_attended():
    # Row 1 is left-padded by 2; its padding keys hold position 0 like its first token.
    query = long([[0, 1, 2, 3, 4], [0, 0, 0, 1, 2]])
    keys = query.clone()
    valid = flags([[1, 1, 1, 1, 1], [0, 0, 1, 1, 1]])

    check(query, keys, valid, "left-padded prefill")


@pytest.mark.contract
@pytest.mark.clause("PT17.4")
def test_rows_may_start_at_different_nonzero_positions():
    query = long([[102, 103], [9, 10]])
    keys = long([[99, 100, 101, 102, 103], [7, 8, 9, 10, 0]])
    valid = flags([[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]])

    check(query, keys, valid, "nonzero origins, Tq=2, Tk=5")


@pytest.mark.contract
@pytest.mark.clause("PT17.5")
def test_padding_keys_may_hold_any_position():
    # Row 1's invalid keys hold large and decreasing positions: ignored, never rejected.
    query = long([[3, 4], [3, 4]])
    keys = long([[0, 1, 2, 3, 4, 5], [50, 40, 2, 3, 4, 1]])
    valid = flags([[1, 1, 1, 1, 1, 0], [0, 0, 1, 1, 1, 0]])

    check(query, keys, valid, "arbitrary positions on invalid keys")


@pytest.mark.contract
@pytest.mark.clause("PT17.4", "PT17.5")
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


@pytest.mark.contract
@pytest.mark.clause("PT17.11")
@pytest.mark.parametrize(("Tq", "origin"), [(1, 3000), (3, 2500)])
def test_no_square_mask_over_the_largest_position_is_built(Tq, origin):
    # Keys at positions origin..origin+3, queries the last Tq of them. A square mask
    # over positions would hold millions of entries; the answer holds B * Tq * Tk.
    Tk = 4
    keys = long([[origin + j for j in range(Tk)]] * 2)
    query = keys[:, Tk - Tq :].clone()
    valid = flags([[1] * Tk, [0] + [1] * (Tk - 1)])
    limit = 2 * (2 * Tq * Tk) + 2 * (origin + Tk)  # the mask, or one position index

    with CountedCalls() as watch:  # the most elements one torch call returned (judge: worker's)
        got = drill.position_causal_mask(query, keys, valid)

    assert torch.equal(got, loop_mask(query, keys, valid)), "mask at large positions"
    assert watch.largest <= limit, f"a tensor of {watch.largest} elements was built (limit {limit})"


@pytest.mark.contract
@pytest.mark.clause("PT17.11")
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


@pytest.mark.contract
@pytest.mark.clause("PT17.7")
def test_decreasing_query_positions_in_a_row_are_rejected():
    call = {**valid_call(), "query_positions": long([[3, 4], [4, 3]])}
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.position_causal_mask(**call), BAD_VALUE, "query_positions")


@pytest.mark.contract
@pytest.mark.clause("PT17.8")
def test_decreasing_positions_among_valid_keys_are_rejected():
    call = {**valid_call(), "key_positions": long([[0, 1, 2, 3, 4], [0, 1, 3, 2, 4]])}
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.position_causal_mask(**call), BAD_VALUE, "key_positions")


@pytest.mark.contract
@pytest.mark.clause("PT17.6")
def test_a_query_with_no_allowed_key_comes_back_all_false():
    # Row 1: every key before query 0's position is padding; query 0 sees nothing.
    query = long([[2, 3], [1, 4]])
    keys = long([[0, 1, 2, 3], [0, 3, 4, 9]])
    valid = flags([[1, 1, 1, 1], [0, 1, 1, 0]])

    got = drill.position_causal_mask(query, keys, valid)

    assert not bool(got[1, 0, 0].any()), f"row 1, query 0 may attend nothing, got {got[1, 0, 0]}"
    check(query, keys, valid, "a query with no allowed key")


@pytest.mark.contract
@pytest.mark.clause("PT17.1")
def test_the_arguments_bind_by_name_in_the_kits_order():
    query, keys = long([[1, 2]]), long([[0, 1, 2]])
    valid = flags([[1, 1, 1]])
    by_name = drill.position_causal_mask(key_valid=valid, key_positions=keys, query_positions=query)
    assert torch.equal(by_name, loop_mask(query, keys, valid)), "called by name"
    mixed = drill.position_causal_mask(query, keys, key_valid=valid)
    assert torch.equal(mixed, loop_mask(query, keys, valid)), "called by position and name"


@pytest.mark.contract
@pytest.mark.clause("PT17.11")
def test_the_mask_is_a_new_tensor_the_caller_may_write():
    query, keys = long([[0]]), long([[0]])
    valid = flags([[1]])
    before = valid.clone()
    got = drill.position_causal_mask(query, keys, valid)
    got = got.clone() if got.is_inference() else got
    got.fill_(False)
    assert torch.equal(valid, before), "writing the mask reached key_valid"


@pytest.mark.contract
@pytest.mark.clause("PT17.7", "PT17.8")
@pytest.mark.parametrize(
    ("argument", "rows"),
    [("query_positions", [[3, 4], [4, 4]]), ("key_positions", [[0, 1, 2, 3, 4], [0, 1, 2, 2, 4]])],
    ids=["equal query positions", "equal valid key positions"],
)
def test_equal_neighbouring_positions_are_accepted(argument, rows):
    call = {**valid_call(), argument: long(rows)}
    try:
        drill.position_causal_mask(**call)
    except ValueError as error:
        raise AssertionError(f"equal neighbouring {argument} were rejected: {error}") from error
    check(call["query_positions"], call["key_positions"], call["key_valid"], "equal positions")


# ---- extension: the reference's doors past the contract ----


@pytest.mark.extension
@pytest.mark.clause("PT17.12")
@pytest.mark.parametrize(
    ("argument", "bad", "errors"),
    [
        ("query_positions", lambda c: c["query_positions"].double(), WRONG_KIND),
        ("key_positions", lambda c: c["key_positions"].bool(), WRONG_KIND),
        ("key_valid", lambda c: c["key_valid"].long(), WRONG_KIND),
        ("query_positions", lambda c: c["query_positions"][0], BAD_VALUE),
        ("key_positions", lambda c: torch.empty(2, 5, dtype=torch.long, device="meta"), BAD_VALUE),
        ("key_valid", lambda c: torch.empty(2, 5, dtype=torch.bool, device="meta"), BAD_VALUE),
        ("query_positions", lambda c: [[3, 4], [3, 4]], WRONG_KIND),
    ],
    ids=["float queries", "bool keys", "0/1 key_valid", "1-D queries", "meta keys",
         "meta key_valid", "a list"],
)  # fmt: skip
def test_the_reference_rejects_inputs_the_contract_leaves_undefined(argument, bad, errors):
    call = valid_call()
    call[argument] = bad(call)
    kept = {n: t for n, t in call.items() if isinstance(t, torch.Tensor) and not t.is_meta}
    with inputs_untouched(**kept):
        assert_rejects(lambda: drill.position_causal_mask(**call), errors, argument)


@pytest.mark.contract
@pytest.mark.clause("PT17.6")
def test_a_query_before_every_key_sees_nothing():
    query = long([[5], [0]])
    keys = long([[3, 4, 5], [1, 2, 3]])  # row 1: every key comes after the query
    valid = flags([[1, 1, 1], [1, 1, 1]])

    got = drill.position_causal_mask(query, keys, valid)

    assert not bool(got[1].any()), f"row 1's query precedes every key, got {got[1]}"
    check(query, keys, valid, "a query before every key")


@pytest.mark.contract
@pytest.mark.clause("PT17.7")
def test_a_decrease_after_a_rise_in_the_second_row_is_rejected():
    # Row 1 goes 2, 5, 4: every position is above the row's first, but 4 follows 5.
    call = {
        "query_positions": long([[3, 4, 5], [2, 5, 4]]),
        "key_positions": long([[0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5]]),
        "key_valid": flags([[1] * 6, [1] * 6]),
    }
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.position_causal_mask(**call), BAD_VALUE, "query_positions")
