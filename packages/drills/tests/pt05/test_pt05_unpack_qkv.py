"""PT05 unpack_qkv(packed [N, (Hq + 2*Hkv) * D], Hq, Hkv, D) -> Q [N, Hq, D], K, V [N, Hkv, D]."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import BAD_VALUE, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_PT05_MODULE")

pytestmark = [pytest.mark.owner("pt05"), pytest.mark.contract]

HEAD_ARGUMENTS = ("packed", "query_heads", "kv_heads", "head_dim")


def loop_unpack(packed: torch.Tensor, Hq: int, Hkv: int, D: int):
    """Q, K, V element by element: column (part offset + h*D + d) of each row."""
    rows = packed.tolist()
    starts = {"q": 0, "k": Hq * D, "v": (Hq + Hkv) * D}
    heads = {"q": Hq, "k": Hkv, "v": Hkv}
    parts = []
    for part in "qkv":
        values = [
            [[row[starts[part] + h * D + d] for d in range(D)] for h in range(heads[part])]
            for row in rows
        ]
        tensor = torch.tensor(values, dtype=packed.dtype).reshape(len(rows), heads[part], D)
        parts.append(tensor.to(packed.device))
    return tuple(parts)


def check(packed: torch.Tensor, Hq: int, Hkv: int, D: int, what: str):
    # the oracle first: the call's writes cannot reach it
    expected = loop_unpack(packed, Hq, Hkv, D)
    got = drill.unpack_qkv(packed, Hq, Hkv, D)
    assert isinstance(got, tuple) and len(got) == 3, f"{what}: want the tuple (Q, K, V)"
    for name, tensor, want in zip("QKV", got, expected, strict=True):
        assert tensor.shape == want.shape, (
            f"{what}: {name} {tuple(tensor.shape)}, want {tuple(want.shape)}"
        )
        assert tensor.dtype == packed.dtype, f"{what}: {name} {tensor.dtype}, packed {packed.dtype}"
        assert torch.equal(tensor, want), f"{what}: {name} differs from the packed columns"
    return got


def counting(N: int, Hq: int, Hkv: int, D: int) -> torch.Tensor:
    """Each entry its own column number (plus 1000 per row): any misplaced column shows."""
    width = (Hq + 2 * Hkv) * D
    values = torch.arange(N * width, dtype=torch.float32) % width + 1000 * (
        torch.arange(N * width) // width
    )
    return values.reshape(N, width).to(test_device())


@pytest.mark.clause("PT05.2", "PT05.4")
def test_query_key_value_come_in_that_order():
    # Hq=2, Hkv=1, D=3: columns 0-5 are Q, 6-8 K, 9-11 V.
    q, k, v = check(counting(2, 2, 1, 3), 2, 1, 3, "Hq=2, Hkv=1, D=3")
    assert q[1, 1].tolist() == [1003.0, 1004.0, 1005.0], f"Q's second head of row 1: {q[1, 1]}"
    assert k[1, 0].tolist() == [1006.0, 1007.0, 1008.0], f"K of row 1: {k[1, 0]}"
    assert v[1, 0].tolist() == [1009.0, 1010.0, 1011.0], f"V of row 1: {v[1, 0]}"


@pytest.mark.clause("PT05.4", "PT05.5")
@pytest.mark.parametrize(
    ("Hq", "Hkv", "D"),
    [(4, 1, 2), (6, 2, 3), (4, 2, 2), (3, 3, 4), (1, 1, 5)],
    ids=["MQA 4:1", "GQA 6:2", "GQA 4:2", "equal heads 3:3", "one head"],
)
def test_mqa_gqa_and_equal_heads_follow_one_rule(Hq, Hkv, D):
    check(counting(3, Hq, Hkv, D), Hq, Hkv, D, f"Hq={Hq}, Hkv={Hkv}, D={D}")
    check(seeded(3, (Hq + 2 * Hkv) * D, seed=Hq * 10 + Hkv), Hq, Hkv, D, "random values")


@pytest.mark.clause("PT05.6")
@pytest.mark.parametrize(
    "layout", ["columns of a wider buffer", "every other row", "transposed buffer"]
)
def test_a_noncontiguous_row_view_of_the_right_width_is_accepted(layout):
    Hq, Hkv, D = 4, 2, 2  # width 16
    views = {
        "columns of a wider buffer": seeded(3, 21, seed=1)[:, 3:19],
        "every other row": seeded(6, 16, seed=1)[::2],
        "transposed buffer": seeded(16, 3, seed=1).t(),
    }
    packed = views[layout]
    assert not packed.is_contiguous() and packed.shape == (3, 16)
    check(packed, Hq, Hkv, D, layout)


@pytest.mark.clause("PT05.3")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.int64], ids=str)
def test_the_parts_keep_packeds_dtype_and_device(dtype):
    packed = (counting(2, 2, 1, 2)).to(dtype)
    for part in check(packed, 2, 1, 2, str(dtype)):
        assert part.device == packed.device, f"a part on {part.device}"


@pytest.mark.clause("PT05.2", "PT05.4", "PT05.5")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_head_layout_matches_the_column_loop(data):
    Hkv = data.draw(st.integers(1, 3), label="kv_heads")
    Hq = Hkv * data.draw(st.integers(1, 4), label="group size")
    D = data.draw(st.integers(1, 4), label="head_dim")
    N = data.draw(st.integers(1, 4), label="N")

    check(counting(N, Hq, Hkv, D), Hq, Hkv, D, f"N={N}, Hq={Hq}, Hkv={Hkv}, D={D}")


@pytest.mark.clause("PT05.1")
def test_the_arguments_bind_by_name_in_the_kits_order():
    packed = counting(2, 2, 1, 2)
    assert_binds(drill.unpack_qkv, packed, 2, 1, 2)
    assert_binds(drill.unpack_qkv, head_dim=2, kv_heads=1, query_heads=2, packed=packed)
    by_name = drill.unpack_qkv(head_dim=2, kv_heads=1, query_heads=2, packed=packed)
    for got, want in zip(by_name, loop_unpack(packed, 2, 1, 2), strict=True):
        assert torch.equal(got, want), "called by name"


# ---- rejection: valid in every respect but one, before any work ----


@pytest.mark.clause("PT05.7")
@pytest.mark.parametrize(
    ("Hq", "Hkv", "D"),
    [(3, 2, 2), (4, 3, 1), (2, 4, 2)],
    ids=["3 over 2", "4 over 3", "fewer query heads than kv heads"],
)
def test_query_heads_that_are_not_a_multiple_of_kv_heads_are_rejected(Hq, Hkv, D):
    packed = counting(2, Hq, Hkv, D)  # the width itself is right
    with inputs_untouched(packed=packed):
        assert_rejects(
            lambda: drill.unpack_qkv(packed, Hq, Hkv, D), BAD_VALUE, ("query_heads", "kv_heads")
        )


@pytest.mark.clause("PT05.8")
@pytest.mark.parametrize(
    ("width", "Hq", "Hkv", "D"),
    [(15, 4, 2, 2), (17, 4, 2, 2), (12, 4, 2, 2), (16, 4, 2, 3)],
    ids=["one column short", "one column over", "K and V counted once", "another head_dim"],
)
def test_a_last_dim_that_is_not_the_packed_width_is_rejected(width, Hq, Hkv, D):
    packed = seeded(2, width, seed=width)
    with inputs_untouched(packed=packed):
        assert_rejects(lambda: drill.unpack_qkv(packed, Hq, Hkv, D), BAD_VALUE, HEAD_ARGUMENTS)
