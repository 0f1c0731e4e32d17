"""PT19 sliding_window_attention(q, k, v, query_positions, key_positions, key_valid, window)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import BAD_VALUE, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_PT19_MODULE")

pytestmark = [pytest.mark.owner("pt19"), pytest.mark.contract]


def ints(values: list[list[int]]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device()).reshape(len(values), -1)


def flags(values: list[list[int]]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.bool, device=test_device()).reshape(len(values), -1)


def oracle(q, k, v, qpos, kpos, valid, window: float) -> torch.Tensor:
    """float64, one (row, head, query) at a time: softmax over the valid keys at positions in
    (p - window, p]; a query with none is 0."""
    B, Hq, Tq, D = q.shape
    G = Hq // k.shape[1]
    qs, ks, vs = q.double().tolist(), k.double().tolist(), v.double().tolist()
    out = torch.zeros(B, Hq, Tq, D, dtype=torch.float64)
    for b in range(B):
        for h in range(Hq):
            for i in range(Tq):
                p = qpos[b][i]
                keys = [
                    j for j in range(len(kpos[b])) if valid[b][j] and p - window < kpos[b][j] <= p
                ]
                if not keys:
                    continue
                s = [sum(x * y for x, y in zip(qs[b][h][i], ks[b][h // G][j], strict=True))
                     / math.sqrt(D) for j in keys]  # fmt: skip
                top = max(s)
                w = [math.exp(x - top) for x in s]
                total = sum(w)
                for d in range(D):
                    mixed = sum(wj * vs[b][h // G][j][d] for wj, j in zip(w, keys, strict=True))
                    out[b, h, i, d] = mixed / total
    return out


def check(q, k, v, qpos, kpos, valid, window, what, rows=None) -> torch.Tensor:
    """Candidate vs oracle on the queries listed in rows ((b, i) pairs; all when None)."""
    # the oracle first: the call's writes cannot reach it
    want = oracle(q, k, v, qpos, kpos, valid, window)
    got = drill.sliding_window_attention(q, k, v, ints(qpos), ints(kpos), flags(valid), window)
    assert tuple(got.shape) == tuple(q.shape), f"{what}: shape {tuple(got.shape)}"
    picked = rows or [(b, i) for b in range(q.shape[0]) for i in range(q.shape[2])]
    for b, i in picked:
        where = f"{what}, query ({b}, {i})"
        assert not got[b, :, i].isnan().any(), f"{where}: NaN at a valid query"
        close = torch.isclose(got[b, :, i].double().cpu(), want[b, :, i], rtol=1e-5, atol=1e-5)
        assert bool(close.all()), f"{where}: {got[b, :, i].tolist()} != {want[b, :, i].tolist()}"
    return got


def prefill(B: int, Hq: int, Hkv: int, T: int, D: int, seed: int):
    q, k, v = seeded(B, Hq, T, D, seed=seed), seeded(B, Hkv, T, D, seed=seed + 1), seeded(
        B, Hkv, T, D, seed=seed + 2)  # fmt: skip
    pos = [list(range(T)) for _ in range(B)]
    return q, k, v, pos, pos, [[1] * T for _ in range(B)]


@pytest.mark.clause("PT19.2", "PT19.4")
@pytest.mark.parametrize("window", [6, 7, 100])
def test_a_window_covering_the_sequence_is_full_causal_attention(window):
    q, k, v, qpos, kpos, valid = prefill(2, 2, 2, 6, 4, seed=1)
    # the oracle first: the call's writes cannot reach it
    full = oracle(q, k, v, qpos, kpos, valid, math.inf)
    got = check(q, k, v, qpos, kpos, valid, window, f"window {window}")
    torch.testing.assert_close(got.double().cpu(), full, rtol=1e-5, atol=1e-5)


@pytest.mark.clause("PT19.4")
@pytest.mark.parametrize("window", [2, 3, 5])
def test_a_query_sees_only_the_keys_of_its_last_window_positions(window):
    q, k, v, qpos, kpos, valid = prefill(2, 2, 1, 7, 4, seed=2)
    check(q, k, v, qpos, kpos, valid, window, f"window {window}")


@pytest.mark.clause("PT19.5")
def test_window_one_returns_each_querys_own_value():
    q, k, v, qpos, kpos, valid = prefill(2, 4, 2, 5, 3, seed=3)
    got = check(q, k, v, qpos, kpos, valid, 1, "window 1")
    torch.testing.assert_close(got, v[:, [0, 0, 1, 1]], rtol=1e-6, atol=1e-6)


@pytest.mark.clause("PT19.6")
@pytest.mark.parametrize(("start", "window"), [(5, 3), (2, 4), (7, 2)])
def test_a_chunk_of_queries_after_a_cache_equals_those_rows_of_the_prefill(start, window):
    q, k, v, qpos, kpos, valid = prefill(2, 2, 2, 8, 4, seed=4)
    # copies first: the first call's writes cannot reach the chunk's check
    q_given, k_given, v_given = q.clone(), k.clone(), v.clone()
    whole = drill.sliding_window_attention(q, k, v, ints(qpos), ints(kpos), flags(valid), window)
    chunk_pos = [list(range(start, 8)) for _ in range(2)]
    chunk = q_given[:, :, start:]
    got = check(chunk, k_given, v_given, chunk_pos, kpos, valid, window, f"chunk from {start}")
    torch.testing.assert_close(got, whole[:, :, start:], rtol=1e-5, atol=1e-5)


@pytest.mark.clause("PT19.7")
@pytest.mark.parametrize("window", [1, 2, 4])
def test_left_padded_rows_equal_their_unpadded_runs(window):
    q, k, v, _, _, _ = prefill(3, 2, 2, 6, 4, seed=5)
    pads = [0, 3, 1]  # row 1: three padding columns, then tokens at positions 0..2
    qpos = [[max(0, i - p) for i in range(6)] for p in pads]
    valid = [[int(i >= p) for i in range(6)] for p in pads]
    rows = [(b, i) for b, p in enumerate(pads) for i in range(p, 6)]
    got = check(q, k, v, qpos, qpos, valid, window, f"left padding, window {window}", rows)
    alone = drill.sliding_window_attention(q[1:2, :, 3:], k[1:2, :, 3:], v[1:2, :, 3:],
                                           ints([[0, 1, 2]]), ints([[0, 1, 2]]),
                                           flags([[1, 1, 1]]), window)  # fmt: skip
    torch.testing.assert_close(got[1:2, :, 3:], alone, rtol=1e-5, atol=1e-5)


@pytest.mark.clause("PT19.8")
@pytest.mark.parametrize(("Hq", "Hkv"), [(4, 4), (4, 2), (8, 2)], ids=["MHA", "GQA 2", "GQA 4"])
def test_query_heads_read_their_groups_kv_head(Hq, Hkv):
    q, k, v, qpos, kpos, valid = prefill(2, Hq, Hkv, 5, 4, seed=6)
    check(q, k, v, qpos, kpos, valid, 3, f"Hq={Hq}, Hkv={Hkv}")


@pytest.mark.clause("PT19.3")
def test_the_output_has_qs_dtype_and_device():
    q, k, v, qpos, kpos, valid = prefill(1, 2, 1, 3, 4, seed=7)
    got = drill.sliding_window_attention(q, k, v, ints(qpos).int(), ints(kpos).int(),
                                         flags(valid), 2)  # fmt: skip
    assert got.dtype == torch.float32 and got.device == q.device


@pytest.mark.clause("PT19.2", "PT19.4", "PT19.7", "PT19.8")
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_any_small_problem_matches_the_oracle(data):
    B, T, Hkv, G = (data.draw(st.integers(lo, hi), label=n) for n, lo, hi in
                    [("B", 1, 2), ("T", 1, 6), ("Hkv", 1, 2), ("G", 1, 2)])  # fmt: skip
    window = data.draw(st.integers(1, T + 1), label="window")
    pads = [data.draw(st.integers(0, T - 1), label=f"pad[{b}]") for b in range(B)]
    seed = data.draw(st.integers(0, 2**16), label="seed")
    q, k, v, _, _, _ = prefill(B, Hkv * G, Hkv, T, 3, seed=seed)
    pos = [[max(0, i - p) for i in range(T)] for p in pads]
    valid = [[int(i >= p) for i in range(T)] for p in pads]
    rows = [(b, i) for b, p in enumerate(pads) for i in range(p, T)]
    check(q, k, v, pos, pos, valid, window, f"T={T}, window={window}, pads={pads}", rows)


@pytest.mark.clause("PT19.9")
def test_the_inputs_are_only_read():
    q, k, v, qpos, kpos, valid = prefill(2, 2, 1, 4, 3, seed=8)
    tensors = {"q": q, "k": k, "v": v, "query_positions": ints(qpos),
               "key_positions": ints(kpos), "key_valid": flags(valid)}  # fmt: skip
    with inputs_untouched(**tensors):
        drill.sliding_window_attention(**tensors, window=2)


@pytest.mark.clause("PT19.1")
def test_the_arguments_bind_by_name_in_this_projects_order():
    q, k, v, qpos, kpos, valid = prefill(1, 2, 1, 4, 3, seed=9)
    args = (q, k, v, ints(qpos), ints(kpos), flags(valid), 2)
    named = dict(zip(("q", "k", "v", "query_positions", "key_positions", "key_valid", "window"),
                     args, strict=True))  # fmt: skip
    assert_binds(drill.sliding_window_attention, *args)
    assert_binds(drill.sliding_window_attention, **dict(reversed(list(named.items()))))
    got = drill.sliding_window_attention(**dict(reversed(list(named.items()))))
    torch.testing.assert_close(got.double().cpu(), oracle(q, k, v, qpos, kpos, valid, 2),
                               rtol=1e-5, atol=1e-5)  # fmt: skip


@pytest.mark.clause("PT19.10")
@pytest.mark.parametrize("window", [0, -1, -5])
def test_a_nonpositive_window_is_rejected(window):
    q, k, v, qpos, kpos, valid = prefill(2, 2, 1, 4, 3, seed=10)
    tensors = {"q": q, "k": k, "v": v, "query_positions": ints(qpos),
               "key_positions": ints(kpos), "key_valid": flags(valid)}  # fmt: skip
    with inputs_untouched(**tensors):
        assert_rejects(lambda: drill.sliding_window_attention(**tensors, window=window),
                       BAD_VALUE, "window", values=[window])  # fmt: skip
