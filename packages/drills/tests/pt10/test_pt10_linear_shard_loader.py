"""PT10 load_linear_shard_(target, source, axis, rank, world_size): one rank's slice, in place."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_PT10_MODULE")

pytestmark = [pytest.mark.owner("pt10"), pytest.mark.contract]

OUT, IN = 8, 6


def load(*args, **kwargs) -> object:
    """A valid call: a refusal or an autograd error from it is a failed check, not a crash."""
    try:
        return drill.load_linear_shard_(*args, **kwargs)
    except (ValueError, TypeError, RuntimeError) as error:
        raise AssertionError(f"a valid load failed: {type(error).__name__}: {error}") from error


def local_shape(shape, axis: int, world_size: int) -> tuple[int, ...]:
    sizes = list(shape)
    sizes[axis] //= world_size
    return tuple(sizes)


def empty_param(shape, dtype=torch.float32) -> nn.Parameter:
    """A rank-local Parameter before loading: NaN everywhere, so an unwritten cell shows."""
    return nn.Parameter(torch.full(shape, float("nan"), dtype=dtype, device=test_device()))


def load_every_rank(source: torch.Tensor, axis: int, world_size: int) -> list[nn.Parameter]:
    shards = []
    for rank in range(world_size):
        target = empty_param(local_shape(source.shape, axis, world_size), source.dtype)
        load(target, source, axis, rank, world_size)
        shards.append(target)
    return shards


def check_reassembles(source: torch.Tensor, axis: int, world_size: int, what: str) -> None:
    shards = load_every_rank(source, axis, world_size)
    local = source.shape[axis] // world_size
    for rank, shard in enumerate(shards):
        want = source.narrow(axis, rank * local, local)
        assert torch.equal(shard.detach(), want), f"{what}: rank {rank} holds another slice"
    whole = torch.cat([s.detach() for s in shards], dim=axis)
    assert torch.equal(whole, source), f"{what}: the shards do not reassemble the source"


@pytest.mark.clause("PT10.1")
def test_the_arguments_bind_by_name_in_the_kits_order():
    source = seeded(OUT, IN, seed=1)
    assert_binds(drill.load_linear_shard_, empty_param((4, IN)), source, 0, 1, 2)
    by_position, by_name = empty_param((4, IN)), empty_param((4, IN))
    returned = load(by_position, source, 0, 1, 2)
    load(world_size=2, rank=1, axis=0, source=source, target=by_name)
    assert returned is None, f"the loader returned {type(returned).__name__}, not None"
    assert torch.equal(by_position.detach(), by_name.detach()), "by position vs by name"
    assert torch.equal(by_name.detach(), source[4:]), "rank 1 of 2 by name"


@pytest.mark.clause("PT10.2", "PT10.4")
@pytest.mark.parametrize("axis", [0, 1], ids=["rows", "columns"])
@pytest.mark.parametrize("world_size", [2, 3])
def test_every_ranks_shard_reassembles_the_source(axis, world_size):
    source = seeded(6, 12, seed=2)
    check_reassembles(source, axis, world_size, f"axis {axis}, world size {world_size}")


@pytest.mark.clause("PT10.2", "PT10.4")
@pytest.mark.parametrize("axis", [0, 1], ids=["rows", "columns"])
def test_world_size_one_loads_the_whole_source(axis):
    source = seeded(OUT, IN, seed=3)
    check_reassembles(source, axis, 1, f"world size 1, axis {axis}")


@pytest.mark.clause("PT10.4")
def test_a_later_rank_of_four_takes_its_own_columns():
    source = seeded(OUT, 12, seed=4)
    target = empty_param((OUT, 3))
    load(target, source, 1, 2, 4)
    assert torch.equal(target.detach(), source[:, 6:9]), "rank 2 of 4 along the columns"


@pytest.mark.clause("PT10.5")
@pytest.mark.parametrize("layout", ["transposed", "strided rows", "sliced columns"])
@pytest.mark.parametrize("axis", [0, 1], ids=["rows", "columns"])
def test_a_noncontiguous_source_is_sharded_by_its_logical_layout(layout, axis):
    views = {
        "transposed": seeded(12, OUT, seed=5).T,  # [8, 12]
        "strided rows": seeded(2 * OUT, 12, seed=5)[::2],
        "sliced columns": seeded(OUT, 15, seed=5)[:, 2:14],
    }
    source = views[layout]
    assert not source.is_contiguous()
    check_reassembles(source, axis, 4, f"{layout}, axis {axis}")


@pytest.mark.clause("PT10.5")
def test_a_noncontiguous_target_view_is_written_in_place():
    buffer = torch.full((IN, OUT), float("nan"), device=test_device())
    target = buffer.T[:4]  # [4, IN], column-major view of its buffer
    source = seeded(OUT, IN, seed=6)
    load(target, source, 0, 1, 2)
    assert torch.equal(buffer.T[:4], source[4:]), "the view's memory does not hold rank 1's rows"
    assert torch.isnan(buffer.T[4:]).all(), "the loader wrote outside the target view"


@pytest.mark.clause("PT10.3")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float64], ids=str)
def test_the_target_keeps_its_dtype_device_and_kind(dtype):
    source = seeded(OUT, IN, seed=7, dtype=dtype)
    target = empty_param((OUT, 3), dtype)
    load(target, source, 1, 0, 2)
    assert isinstance(target, nn.Parameter) and target.dtype == dtype
    assert target.device == source.device
    assert torch.equal(target.detach(), source[:, :3])


@pytest.mark.clause("PT10.10")
def test_a_parameter_that_requires_grad_is_loaded_without_autograd():
    source = seeded(OUT, IN, seed=8)
    target = empty_param((4, IN))
    assert torch.is_grad_enabled()

    load(target, source, 0, 0, 2)

    assert target.requires_grad and target.is_leaf and target.grad_fn is None
    assert torch.equal(target.detach(), source[:4])
    (target * 2).sum().backward()
    assert torch.equal(target.grad, torch.full_like(target, 2.0)), "the loaded Parameter trains"


@pytest.mark.clause("PT10.10")
@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
def test_the_load_also_works_inside_a_grad_free_block(mode):
    source = seeded(OUT, IN, seed=9)
    target = empty_param((OUT, 2))
    block = torch.no_grad() if mode == "no_grad" else torch.inference_mode()
    with block:
        load(target, source, 1, 2, 3)
    assert target.requires_grad and torch.equal(target.detach(), source[:, 4:])


@pytest.mark.clause("PT10.11")
def test_the_parameter_is_written_in_its_own_memory():
    source = seeded(OUT, IN, seed=10)
    target = empty_param((4, IN))
    address, storage = target.data_ptr(), target.untyped_storage().data_ptr()

    with inputs_untouched(source=source):
        load(target, source, 0, 1, 2)

    assert target.data_ptr() == address, "the Parameter was moved to other memory (.data =)"
    assert target.untyped_storage().data_ptr() == storage
    assert torch.equal(target.detach(), source[4:])


# ---- rejection: one thing wrong, nothing written ----


def refused(call: dict, errors, argument) -> None:
    tensors = {k: v for k, v in call.items() if isinstance(v, torch.Tensor)}
    with inputs_untouched(**tensors):
        assert_rejects(lambda: drill.load_linear_shard_(**call), errors, argument)


def valid_call() -> dict:
    return {"target": empty_param((4, IN)), "source": seeded(OUT, IN, seed=11), "axis": 0,
            "rank": 1, "world_size": 2}  # fmt: skip


@pytest.mark.clause("PT10.6")
@pytest.mark.parametrize(("axis", "world_size", "shape"), [(0, 3, (2, IN)), (1, 4, (OUT, 1))])
def test_a_dim_that_does_not_split_evenly_is_refused(axis, world_size, shape):
    call = {**valid_call(), "axis": axis, "world_size": world_size, "target": empty_param(shape),
            "rank": world_size - 1}  # fmt: skip
    refused(call, BAD_VALUE, ("source", "world_size", "axis"))


@pytest.mark.clause("PT10.7")
@pytest.mark.parametrize(
    "shape", [(OUT, IN), (OUT, 3), (3, IN), (4, IN, 1)], ids=["full", "other axis", "short", "3-D"]
)
def test_a_target_without_the_shards_shape_is_refused(shape):
    refused({**valid_call(), "target": empty_param(shape)}, BAD_VALUE, "target")


@pytest.mark.clause("PT10.8")
@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16], ids=str)
def test_a_source_in_another_dtype_is_refused(dtype):
    call = valid_call()
    call["source"] = call["source"].to(dtype)
    refused(call, WRONG_KIND, ("target", "source"))


@pytest.mark.clause("PT10.9")
def test_a_target_that_overlaps_the_source_is_refused():
    source = seeded(OUT, IN, seed=12)
    call = {**valid_call(), "source": source, "target": source[1:5], "rank": 0}
    refused(call, BAD_VALUE, ("target", "source"))


@pytest.mark.clause("PT10.9")
def test_a_target_that_overlaps_itself_is_refused():
    target = torch.full((1, IN), float("nan"), device=test_device()).expand(4, IN)
    refused({**valid_call(), "target": target}, BAD_VALUE, "target")


def one_buffer(rows: int = 24) -> torch.Tensor:
    return torch.full((rows, IN), float("nan"), device=test_device())


@pytest.mark.clause("PT10.9")
def test_a_target_starting_at_the_sources_last_element_is_refused():
    buffer = one_buffer()
    buffer[:OUT] = seeded(OUT, IN, seed=13)
    source = buffer[:OUT]
    target = buffer.view(-1)[OUT * IN - 1 : OUT * IN - 1 + 4 * IN].view(4, IN)
    refused({**valid_call(), "source": source, "target": target, "rank": 0}, BAD_VALUE,
            ("target", "source"))  # fmt: skip


@pytest.mark.clause("PT10.9")
@pytest.mark.parametrize("where", ["right after", "right before"])
def test_a_target_beside_the_source_in_one_buffer_loads(where):
    buffer = one_buffer()
    if where == "right after":
        source, target = buffer[:OUT], buffer[OUT : OUT + 4]
    else:
        source, target = buffer[4 : 4 + OUT], buffer[:4]
    source.copy_(seeded(OUT, IN, seed=14))
    load(target, source, 0, 1, 2)
    assert torch.equal(target, source[4:]), f"a target {where} the source"


@pytest.mark.clause("PT10.9")
def test_a_one_element_overlap_is_refused():
    source = seeded(2, 1, seed=15)
    refused({"target": source[1:2], "source": source, "axis": 0, "rank": 0, "world_size": 2},
            BAD_VALUE, ("target", "source"))  # fmt: skip
    single = seeded(1, 1, seed=16)
    refused({"target": single[:, :], "source": single, "axis": 0, "rank": 0, "world_size": 1},
            BAD_VALUE, ("target", "source"))  # fmt: skip


@pytest.mark.clause("PT10.9")
def test_rows_that_overlap_by_one_element_are_refused():
    target = one_buffer().view(-1).as_strided((4, IN), (IN - 1, 1))
    refused({**valid_call(), "target": target}, BAD_VALUE, "target")


@pytest.mark.clause("PT10.9")
def test_an_expanded_target_of_two_rows_is_refused():
    target = torch.full((1, IN), float("nan"), device=test_device()).expand(2, IN)
    refused({**valid_call(), "target": target, "world_size": 4}, BAD_VALUE, "target")


@pytest.mark.clause("PT10.4", "PT10.9")
def test_a_single_row_target_with_stride_zero_still_loads():
    target = torch.full((IN,), float("nan"), device=test_device()).as_strided((1, IN), (0, 1))
    source = seeded(OUT, IN, seed=17)
    load(target, source, 0, 3, OUT)
    assert torch.equal(target, source[3:4]), "a one-row shard held as an expanded view"


@pytest.mark.clause("PT10.2", "PT10.4")
def test_an_empty_source_loads_into_an_empty_target():
    source = seeded(0, IN, seed=18)
    target = empty_param((0, IN))
    load(target, source, 0, 0, 2)
    assert tuple(target.shape) == (0, IN)
