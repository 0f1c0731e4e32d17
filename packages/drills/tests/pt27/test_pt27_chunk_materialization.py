"""PT27 materialize_chunks(token_buffer [B, T], starts [B], counts [B])
-> (tokens [N], row_ids [N], positions [N], offsets [B + 1])."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import assert_binds, inputs_untouched

drill = candidate("DRILL_PT27_MODULE")

pytestmark = [pytest.mark.owner("pt27"), pytest.mark.contract]


def ints(values, dtype: torch.dtype = torch.long) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype, device=test_device())


def buffer(B: int, T: int, dtype: torch.dtype = torch.long) -> torch.Tensor:
    """Token b * 100 + t at row b, position t: every value tells where it was read."""
    values = [[b * 100 + t for t in range(T)] for b in range(B)]
    return torch.tensor(values, dtype=dtype, device=test_device()).reshape(B, T)


def loop_chunks(token_buffer: torch.Tensor, starts: list[int], counts: list[int]):
    rows = token_buffer.tolist()
    tokens, row_ids, positions, offsets = [], [], [], [0]
    for b, (start, count) in enumerate(zip(starts, counts, strict=True)):
        for position in range(start, start + count):
            tokens.append(rows[b][position])
            row_ids.append(b)
            positions.append(position)
        offsets.append(offsets[-1] + count)
    return tokens, row_ids, positions, offsets


def check(token_buffer, starts: list[int], counts: list[int], what: str, index_dtype=torch.long):
    # the oracle first: the call's writes cannot reach it
    want = loop_chunks(token_buffer, starts, counts)
    got = drill.materialize_chunks(
        token_buffer, ints(starts, index_dtype), ints(counts, index_dtype)
    )
    assert isinstance(got, tuple) and len(got) == 4, f"{what}: want a 4-tuple, got {type(got)}"
    names = ("tokens", "row_ids", "positions", "offsets")
    for name, tensor, expected in zip(names, got, want, strict=True):
        assert tuple(tensor.shape) == (len(expected),), (
            f"{what}: {name} shape {tuple(tensor.shape)}, want ({len(expected)},)"
        )
        assert not tensor.is_floating_point() and tensor.dtype != torch.bool, f"{name} {tensor}"
        assert tensor.tolist() == expected, f"{what}: {name} {tensor.tolist()}, want {expected}"
    return got


@pytest.mark.clause("PT27.2", "PT27.4")
def test_mixed_prompt_and_decode_chunks_keep_request_and_position_order():
    got = check(buffer(4, 9), [0, 5, 2, 8], [6, 1, 3, 1], "prompt, decode, chunk, decode")
    assert got[0].tolist()[:7] == [0, 1, 2, 3, 4, 5, 105], "the oracle itself"


@pytest.mark.clause("PT27.4")
@pytest.mark.parametrize("row", [1, 2])
def test_a_later_rows_chunk_starts_at_its_own_position(row):
    starts, counts = [0, 0, 0], [2, 2, 2]
    starts[row] = 4
    check(buffer(3, 7), starts, counts, f"row {row} starts at 4")


@pytest.mark.clause("PT27.2", "PT27.5")
@pytest.mark.parametrize(
    "counts", [[0, 3, 0, 2], [0, 0, 0, 0], [3, 0, 0, 0]], ids=["mixed", "all zero", "trailing"]
)
def test_zero_count_rows_add_nothing_and_repeat_their_offset(counts):
    check(buffer(4, 6), [1, 2, 6, 0], counts, f"counts {counts}")


@pytest.mark.clause("PT27.2")
def test_an_empty_batch_gives_empty_results_and_one_offset():
    check(buffer(0, 5), [], [], "B = 0")


@pytest.mark.clause("PT27.4")
def test_chunks_may_end_exactly_at_the_buffers_end():
    check(buffer(3, 5), [0, 2, 5], [5, 3, 0], "full row, tail, empty at T")


@pytest.mark.clause("PT27.3")
@pytest.mark.parametrize(
    ("dtype", "index_dtype"), [(torch.int32, torch.int32), (torch.int64, torch.int32),
                               (torch.int16, torch.int64)], ids=str
)  # fmt: skip
def test_tokens_keep_the_buffers_dtype_and_device(dtype, index_dtype):
    token_buffer = buffer(3, 6, dtype)
    tokens, *rest = check(token_buffer, [1, 0, 3], [2, 4, 3], f"{dtype}", index_dtype)
    assert tokens.dtype == dtype, f"tokens {tokens.dtype}, buffer {dtype}"
    for tensor in (tokens, *rest):
        assert tensor.device == token_buffer.device, f"a result on {tensor.device}"


@pytest.mark.clause("PT27.6")
@pytest.mark.parametrize("layout", ["transposed", "strided positions", "sliced rows"])
def test_a_noncontiguous_buffer_is_read_by_its_logical_layout(layout):
    views = {
        "transposed": buffer(8, 4).t(),  # [4, 8], row stride 1
        "strided positions": buffer(4, 16)[:, ::2],  # [4, 8], position stride 2
        "sliced rows": buffer(6, 11)[1:5, 3:],  # [4, 8], storage offset
    }
    token_buffer = views[layout]
    assert not token_buffer.is_contiguous()
    check(token_buffer, [0, 3, 7, 2], [4, 5, 1, 0], layout)


@pytest.mark.clause("PT27.2", "PT27.4", "PT27.5")
@pytest.mark.parametrize("seed", [2, 8, 13])
def test_random_schedules_match_the_row_loop(seed):
    generator = torch.Generator().manual_seed(seed)
    B, T = 6, 10
    starts = torch.randint(0, T + 1, (B,), generator=generator).tolist()
    counts = [int(torch.randint(0, T - s + 1, (1,), generator=generator)) for s in starts]
    check(buffer(B, T), starts, counts, f"seed {seed}: starts {starts}, counts {counts}")


@pytest.mark.clause("PT27.1")
def test_the_arguments_bind_by_name_in_the_kits_order():
    token_buffer, starts, counts = buffer(2, 4), ints([1, 0]), ints([2, 1])
    assert_binds(drill.materialize_chunks, token_buffer, starts, counts)
    assert_binds(drill.materialize_chunks, counts=counts, starts=starts, token_buffer=token_buffer)
    got = drill.materialize_chunks(counts=counts, starts=starts, token_buffer=token_buffer)
    assert got[0].tolist() == [1, 2, 100] and got[3].tolist() == [0, 2, 3], "called by name"


# ---- rejection: valid in every respect but one, before any work ----


def rejected(starts: list[int], counts: list[int], argument, values=()) -> None:
    call = {"token_buffer": buffer(3, 6), "starts": ints(starts), "counts": ints(counts)}
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.materialize_chunks(**call), BAD_VALUE, argument, values=values)


@pytest.mark.clause("PT27.7")
@pytest.mark.parametrize("row", [1, 2])
def test_a_negative_count_in_any_row_is_rejected(row):
    counts = [2, 1, 3]
    counts[row] = -1
    rejected([0, 1, 2], counts, "counts", values=[-1])


@pytest.mark.clause("PT27.8")
@pytest.mark.parametrize(
    ("starts", "counts", "row"),
    [([0, 4, 1], [2, 3, 1], 1), ([0, 1, 5], [1, 1, 2], 2), ([0, -1, 1], [1, 1, 1], 1),
     ([0, 1, 7], [1, 1, 0], 2)],
    ids=["past T in row 1", "past T in row 2", "negative start", "empty range past T"],
)  # fmt: skip
def test_a_range_outside_the_buffer_in_any_row_is_rejected(starts, counts, row):
    rejected(starts, counts, ("starts", "counts"), values=[starts[row]])
