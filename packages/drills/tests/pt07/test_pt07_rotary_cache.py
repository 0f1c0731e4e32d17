"""PT07 RotaryCache(head_dim, base): lazily grown RoPE tables kept as nonpersistent buffers."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import assert_close, candidate, test_device
from gptlab_testkit.objects import assert_same_memory, storage_id
from gptlab_testkit.oracles import assert_binds

drill = candidate("DRILL_PT07_MODULE")

pytestmark = [pytest.mark.owner("pt07")]  # each test says contract or extension

HEAD_DIM, BASE = 8, 10000.0
# One rounding of the float64 table into the dtype, plus the angle error of float32 math.
TOLERANCE = {torch.float64: 2e-4, torch.float32: 2e-4, torch.float16: 1.5e-3, torch.bfloat16: 8e-3}


def build(head_dim: int = HEAD_DIM, base: float = BASE):
    return drill.RotaryCache(head_dim=head_dim, base=base).to(test_device())


def like(dtype: torch.dtype = torch.float32, device: torch.device | str | None = None):
    return torch.zeros(2, 3, dtype=dtype, device=device or test_device())


def oracle(seq_len: int, head_dim: int = HEAD_DIM, base: float = BASE):
    """float64 cos and sin [seq_len, head_dim // 2], one angle at a time."""
    cos = torch.empty(seq_len, head_dim // 2, dtype=torch.float64)
    sin = torch.empty_like(cos)
    for p in range(seq_len):
        for i in range(head_dim // 2):
            angle = p * base ** (-2 * i / head_dim)
            cos[p, i], sin[p, i] = math.cos(angle), math.sin(angle)
    return cos, sin


def check_tables(tables, seq_len: int, dtype: torch.dtype, what: str, **oracle_args) -> None:
    assert isinstance(tables, tuple) and len(tables) == 2, f"{what}: not a (cos, sin) pair"
    for name, got, want in zip(("cos", "sin"), tables, oracle(seq_len, **oracle_args), strict=True):
        half = oracle_args.get("head_dim", HEAD_DIM) // 2
        assert tuple(got.shape) == (seq_len, half), f"{what}: {name} {tuple(got.shape)}"
        assert got.dtype == dtype, f"{what}: {name} is {got.dtype}, want {dtype}"
        tol = TOLERANCE[dtype]
        assert_close(got.double().cpu(), want, f"{what}: {name}", atol=tol, rtol=0)


def buffer_names(module) -> set[str]:
    return {name for name, _ in module.named_buffers()}


@pytest.mark.contract
@pytest.mark.clause("PT07.1")
def test_the_constructor_and_forward_take_their_arguments_by_position_and_name():
    assert_binds(drill.RotaryCache, HEAD_DIM)
    assert_binds(drill.RotaryCache, head_dim=HEAD_DIM, base=500.0)
    module = drill.RotaryCache(HEAD_DIM).to(test_device())
    by_name = module(seq_len=5, like=like())
    try:
        by_position = module(like(), 5)
    except (TypeError, ValueError) as error:
        raise AssertionError(f"module(like, seq_len) by position is refused: {error}") from error
    for got, want in zip(by_position, by_name, strict=True):
        assert torch.equal(got, want), "forward(like, seq_len) by position vs by name"
    check_tables(by_name, 5, torch.float32, "default base 10000")
    explicit = drill.RotaryCache(HEAD_DIM, 10000.0).to(test_device())(like(torch.float64), 300)
    for got, want in zip(module(like(torch.float64), 300), explicit, strict=True):
        assert torch.equal(got, want), "the default base is not 10000"


@pytest.mark.contract
@pytest.mark.clause("PT07.2", "PT07.4")
@pytest.mark.parametrize(
    ("head_dim", "base", "seq_len"), [(8, 10000.0, 6), (2, 10.0, 3), (6, 500.0, 0)]
)
def test_the_tables_are_the_rotary_angles(head_dim, base, seq_len):
    module = build(head_dim, base)
    check_tables(module(like(), seq_len), seq_len, torch.float32, f"head_dim {head_dim}",
                 head_dim=head_dim, base=base)  # fmt: skip


@pytest.mark.contract
@pytest.mark.clause("PT07.3", "PT07.4")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64], ids=str)
def test_far_positions_are_right_in_every_compute_dtype(dtype):
    module = build()
    check_tables(module(like(dtype), 1024), 1024, dtype, f"1024 positions in {dtype}")


@pytest.mark.contract
@pytest.mark.clause("PT07.5")
def test_the_tables_are_registered_buffers_absent_from_the_state_dict():
    module = build()
    module(like(), 6)

    assert {"cos", "sin"} <= buffer_names(module), f"buffers: {sorted(buffer_names(module))}"
    assert not list(module.state_dict()), f"state_dict holds {list(module.state_dict())}"
    assert not list(module.parameters()), "the tables are parameters"


@pytest.mark.contract
@pytest.mark.clause("PT07.5")
def test_a_strict_load_of_an_empty_checkpoint_fits_and_keeps_the_tables():
    module = build()
    want = module(like(), 6)

    module.load_state_dict({}, strict=True)

    for got, before in zip(module(like(), 6), want, strict=True):
        assert torch.equal(got, before), "the tables changed across a load"


@pytest.mark.contract
@pytest.mark.clause("PT07.6")
def test_the_capacity_never_shrinks_and_covers_every_request():
    module = build()
    served = 0
    for seq_len in (8, 3, 12, 5, 0, 12):
        tables = module(like(), seq_len)
        served = max(served, seq_len)
        assert module.capacity >= served, f"capacity {module.capacity} after serving {served}"
        assert module.cos.shape[0] == module.capacity and module.sin.shape[0] == module.capacity
        check_tables(tables, seq_len, torch.float32, f"after {seq_len}")


@pytest.mark.contract
@pytest.mark.clause("PT07.6")
@settings(max_examples=15, deadline=None)
@given(lengths=st.lists(st.integers(0, 40), min_size=1, max_size=6))
def test_any_request_sequence_grows_the_capacity_monotonically(lengths):
    module = build()
    previous = 0
    for seq_len in lengths:
        tables = module(like(), seq_len)
        assert module.capacity >= max(previous, seq_len), f"{lengths}: capacity {module.capacity}"
        previous = module.capacity
    check_tables(tables, lengths[-1], torch.float32, f"last of {lengths}")
    rows = module.cos[:previous].double().cpu()
    assert_close(rows, oracle(previous)[0], "every cached row", atol=2e-4, rtol=0)


@pytest.mark.contract
@pytest.mark.clause("PT07.7")
def test_a_request_that_fits_reuses_the_buffers_storage():
    module = build()
    module(like(), 12)
    cos, sin = module.cos, module.sin

    for seq_len in (5, 12, 0):
        module(like(), seq_len)
        assert storage_id(module.cos) == storage_id(cos), f"cos reallocated for {seq_len} rows"
        assert storage_id(module.sin) == storage_id(sin), f"sin reallocated for {seq_len} rows"
    assert_same_memory(module.cos, cos, "cos after requests that fit")


@pytest.mark.contract
@pytest.mark.clause("PT07.8")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float64], ids=str)
def test_a_request_in_another_dtype_rebuilds_the_buffers_in_it(dtype):
    module = build()
    module(like(), 10)

    tables = module(like(dtype), 4)

    assert module.cos.dtype == dtype and module.sin.dtype == dtype, module.cos.dtype
    assert module.capacity >= 10, f"the rebuild shrank the capacity to {module.capacity}"
    check_tables(tables, 4, dtype, f"after the switch to {dtype}")
    check_tables(module(like(), 10), 10, torch.float32, "back to float32")
    assert not list(module.state_dict()) and not list(module.parameters())


@pytest.mark.contract
@pytest.mark.clause("PT07.8")
def test_a_request_on_another_device_rebuilds_the_buffers_there():
    module = build()
    module(like(), 6)

    cos, sin = module(like(device="meta"), 6)

    assert cos.device.type == "meta" and sin.device.type == "meta", cos.device
    assert module.cos.device.type == "meta" and module.sin.device.type == "meta"
    check_tables(module(like(), 6), 6, torch.float32, "back on the test device")


@pytest.mark.contract
@pytest.mark.clause("PT07.9")
@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16], ids=str)
def test_the_buffers_follow_to(dtype):
    module = build()
    module(like(), 7)

    module.to(dtype)

    assert module.cos.dtype == dtype and module.sin.dtype == dtype, module.cos.dtype
    assert module.capacity >= 7
    assert not list(module.state_dict()), "the moved tables entered the state dict"
    check_tables(module(like(dtype), 7), 7, dtype, f"after .to({dtype})")


@pytest.mark.contract
@pytest.mark.clause("PT07.9")
def test_the_buffers_follow_to_another_device():
    module = build()
    module(like(), 7)

    module.to("meta")

    assert module.cos.device.type == "meta" and module.sin.device.type == "meta"
