"""PT26 multi_lora_linear(x [N, IN], adapter_ids [N], weight [OUT, IN], bias [OUT] | None,
a_bank [A, R, IN], b_bank [A, OUT, R], scales [A]) -> [N, OUT]; id -1 = the base layer only."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, assert_close, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_PT26_MODULE")

pytestmark = [pytest.mark.owner("pt26"), pytest.mark.contract]

IN, OUT, R, A = 6, 5, 2, 3


def ints(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device())


def layer(dtype: torch.dtype = torch.float32, bias: bool = True, adapters: int = A, rank: int = R):
    """weight, bias, a_bank, b_bank, scales; distinct scales so an adapter mix-up shows."""
    return {
        "weight": seeded(OUT, IN, seed=1, dtype=dtype),
        "bias": seeded(OUT, seed=2, dtype=dtype) if bias else None,
        "a_bank": seeded(adapters, rank, IN, seed=3, dtype=dtype),
        "b_bank": seeded(adapters, OUT, rank, seed=4, dtype=dtype),
        "scales": torch.tensor([0.5, 2.0, -1.5, 0.75][:adapters], dtype=dtype).to(test_device()),
    }


def loop_lora(x, ids: list[int], params) -> torch.Tensor:
    """One row at a time in float64: the base layer, plus its adapter's scaled update."""
    d = {k: (v.double().cpu() if v is not None else None) for k, v in params.items()}
    rows = []
    for n, adapter in enumerate(ids):
        xn = x[n].double().cpu()
        y = d["weight"] @ xn + (d["bias"] if d["bias"] is not None else 0.0)
        if adapter >= 0:
            y = y + d["scales"][adapter] * (d["b_bank"][adapter] @ (d["a_bank"][adapter] @ xn))
        rows.append(y)
    return torch.stack(rows) if rows else torch.zeros(0, OUT, dtype=torch.float64)


TOLERANCE = {
    torch.float32: {},
    torch.float16: {"atol": 2e-2, "rtol": 2e-2},
    torch.bfloat16: {"atol": 1e-1, "rtol": 5e-2},
    torch.float64: {"atol": 1e-10, "rtol": 1e-10},
}


def check(x, ids: list[int], params, what: str) -> torch.Tensor:
    # the oracle first: the call's writes cannot reach it
    want = loop_lora(x, ids, params)
    got = drill.multi_lora_linear(x, ints(ids), **params)
    N = x.shape[0]
    assert tuple(got.shape) == (N, OUT), f"{what}: shape {tuple(got.shape)}, want {(N, OUT)}"
    assert got.dtype == x.dtype, f"{what}: dtype {got.dtype}, x is {x.dtype}"
    assert_close(got.double().cpu(), want, what, **TOLERANCE[x.dtype])
    return got


@pytest.mark.clause("PT26.2", "PT26.4")
def test_mixed_adapters_and_base_rows_keep_their_original_order():
    check(seeded(7, IN, seed=5), [2, -1, 0, 2, 1, -1, 0], layer(), "mixed rows")


@pytest.mark.clause("PT26.4", "PT26.5")
def test_base_only_rows_get_the_base_layer_alone():
    x = seeded(4, IN, seed=6)
    params = layer()
    # the oracle first: the call's writes cannot reach it
    base = torch.nn.functional.linear(
        x.double(), params["weight"].double(), params["bias"].double()
    )
    got = check(x, [-1, -1, -1, -1], params, "every row base only")
    assert_close(got.double(), base, "base rows equal F.linear")


@pytest.mark.clause("PT26.4")
@pytest.mark.parametrize(
    "ids",
    [[1, 0, 1, 0, 1], [-1, 2, -1, 2, -1]],
    ids=["two interleaved", "one adapter, disjoint rows"],
)
def test_one_adapter_on_disjoint_rows(ids):
    check(seeded(5, IN, seed=7), ids, layer(), f"ids {ids}")


@pytest.mark.clause("PT26.4")
@pytest.mark.parametrize("row", [1, 3])
def test_a_later_rows_adapter_is_its_own(row):
    ids = [-1, -1, -1, -1]
    ids[row] = 2
    check(seeded(4, IN, seed=8), ids, layer(), f"row {row} uses adapter 2")


@pytest.mark.clause("PT26.2")
def test_an_empty_input_gives_an_empty_result():
    check(seeded(0, IN, seed=9), [], layer(), "N = 0")


@pytest.mark.clause("PT26.2", "PT26.5")
def test_a_bank_of_no_adapters_serves_base_only_rows():
    check(seeded(3, IN, seed=10), [-1, -1, -1], layer(adapters=0), "A = 0")


@pytest.mark.clause("PT26.6")
@pytest.mark.parametrize(
    "ids", [[0, -1, 2, 1, 0], [-1, -1, -1, -1, -1]], ids=["mixed rows", "base rows only"]
)
def test_the_bias_is_optional(ids):
    check(seeded(5, IN, seed=11), ids, layer(bias=False), f"bias None, ids {ids}")


@pytest.mark.clause("PT26.3", "PT26.4")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64], ids=str)
def test_half_and_double_weights_keep_their_dtype(dtype):
    x = seeded(6, IN, seed=12, dtype=dtype)
    got = check(x, [0, 1, -1, 2, 1, 0], layer(dtype), f"{dtype}")
    assert got.device == x.device, f"result on {got.device}"


@pytest.mark.clause("PT26.4")
@pytest.mark.parametrize("seed", [21, 22, 23])
def test_random_batches_match_the_per_row_oracle(seed):
    generator = torch.Generator().manual_seed(seed)
    ids = (torch.randint(-1, A, (9,), generator=generator)).tolist()
    check(seeded(9, IN, seed=seed), ids, layer(), f"seed {seed}: ids {ids}")


@pytest.mark.clause("PT26.1")
def test_the_arguments_bind_by_name_in_the_kits_order():
    x, ids, params = seeded(3, IN, seed=13), ints([1, -1, 0]), layer()
    order = (x, ids, params["weight"], params["bias"], params["a_bank"], params["b_bank"],
             params["scales"])  # fmt: skip
    assert_binds(drill.multi_lora_linear, *order)
    assert_binds(drill.multi_lora_linear, adapter_ids=ids, x=x, **params)
    rest = {k: v for k, v in params.items() if k != "scales"}
    by_name = drill.multi_lora_linear(scales=params["scales"], adapter_ids=ids, x=x, **rest)
    assert_close(by_name.double(), loop_lora(x, [1, -1, 0], params), "called by name")
    try:
        by_position = drill.multi_lora_linear(*order)
    except (TypeError, ValueError) as error:  # the kit's order was refused
        raise AssertionError(f"called by position in the kit's order: {error!r}") from error
    assert_close(by_position, by_name, "called by position")


# ---- rejection: valid in every respect but one, before any compute ----


def rejected(ids: list[int], params, arguments, values=()) -> None:
    x, index = seeded(4, IN, seed=14), ints(ids)
    tensors = {k: v for k, v in params.items() if v is not None}
    with inputs_untouched(x=x, adapter_ids=index, **tensors):
        assert_rejects(
            lambda: drill.multi_lora_linear(x, index, **params), BAD_VALUE, arguments, values=values
        )


@pytest.mark.clause("PT26.7")
@pytest.mark.parametrize("bad", [-2, A, A + 5], ids=["below -1", "A", "past A"])
@pytest.mark.parametrize("row", [1, 3])
def test_an_unknown_adapter_id_in_any_row_is_rejected(bad, row):
    ids = [0, 1, -1, 2]
    ids[row] = bad
    rejected(ids, layer(), "adapter_ids", values=[bad])


@pytest.mark.clause("PT26.8")
@pytest.mark.parametrize("side", ["a_bank", "b_bank"])
def test_a_rank_mismatch_between_the_banks_is_rejected(side):
    params = layer()
    if side == "a_bank":
        params["a_bank"] = seeded(A, R + 1, IN, seed=15)
    else:
        params["b_bank"] = seeded(A, OUT, R + 1, seed=15)
    rejected([0, 1, -1, 2], params, ("a_bank", "b_bank"))
