"""PT29 apply_allowed_tokens(logits [B, V], allowed_ids [M], offsets [B + 1]) -> [B, V]."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import CountedCalls, assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_PT29_MODULE")

pytestmark = [pytest.mark.owner("pt29"), pytest.mark.contract]

INF = float("inf")


def ints(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device())


def flat(sets: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """(allowed_ids, offsets) of per-row id lists, in CSR form."""
    offsets = [0]
    for ids in sets:
        offsets.append(offsets[-1] + len(ids))
    return ints([i for ids in sets for i in ids]), ints(offsets)


def sentinels(dtype: torch.dtype) -> tuple[float, float]:
    return -INF, torch.finfo(dtype).min


def check(logits: torch.Tensor, sets: list[list[int]], what: str) -> torch.Tensor:
    allowed_ids, offsets = flat(sets)
    got = drill.apply_allowed_tokens(logits, allowed_ids, offsets)
    B, V = logits.shape
    assert tuple(got.shape) == (B, V), f"{what}: shape {tuple(got.shape)}, want {(B, V)}"
    assert got.dtype == logits.dtype, f"{what}: dtype {got.dtype}, logits {logits.dtype}"
    rows, original = got.tolist(), logits.tolist()
    masked = []
    for b in range(B):
        for v in range(V):
            if v in sets[b]:
                assert rows[b][v] == original[b][v], f"{what}: allowed [{b}, {v}] changed"
            else:
                masked.append(rows[b][v])
    if masked:
        assert masked[0] in sentinels(logits.dtype), f"{what}: sentinel {masked[0]}"
        assert all(value == masked[0] for value in masked), f"{what}: sentinels differ {masked}"
    return got


@pytest.mark.clause("PT29.2", "PT29.4")
def test_each_row_keeps_only_its_own_allowed_tokens():
    check(seeded(3, 8, seed=1), [[1, 4], [0, 2, 7], [5]], "sets of 2, 3 and 1")


@pytest.mark.clause("PT29.4")
@pytest.mark.parametrize("row", [1, 2])
def test_a_single_allowed_token_in_a_later_row(row):
    sets = [[0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5]]
    sets[row] = [3]
    check(seeded(3, 6, seed=2), sets, f"row {row} allows only 3")


@pytest.mark.clause("PT29.4", "PT29.5")
def test_duplicate_ids_mean_the_same_as_one():
    logits = seeded(2, 6, seed=3)
    once = check(logits, [[2, 4], [1]], "without duplicates")
    twice = check(logits, [[4, 2, 4, 2], [1, 1, 1]], "with duplicates")
    assert torch.equal(once, twice), "duplicates changed the result"


@pytest.mark.clause("PT29.4", "PT29.5")
@pytest.mark.parametrize("row", [0, 2])
def test_an_empty_set_masks_the_whole_row(row):
    sets = [[1, 3], [0], [2, 5]]
    sets[row] = []
    got = check(seeded(3, 6, seed=4), sets, f"row {row} empty")
    assert all(value in sentinels(torch.float32) for value in got[row].tolist())


@pytest.mark.clause("PT29.4", "PT29.5")
def test_the_full_vocabulary_leaves_a_row_unchanged():
    logits = seeded(2, 5, seed=5)
    got = check(logits, [[4, 3, 2, 1, 0], [2]], "row 0 allows everything, unordered")
    assert torch.equal(got[0], logits[0]), "a full set changed row 0"


@pytest.mark.clause("PT29.4")
def test_allowed_logits_are_kept_bit_for_bit_whatever_their_value():
    logits = torch.tensor([[-INF, 3.0e38, -1.0e-30, 0.0], [INF, -3.0e38, 7.5, -0.0]],
                          device=test_device())  # fmt: skip
    check(logits, [[0, 1, 2], [0, 1, 3]], "extreme allowed values")


@pytest.mark.clause("PT29.2")
def test_an_empty_batch_gives_an_empty_result():
    check(seeded(0, 6, seed=6), [], "B = 0")


@pytest.mark.clause("PT29.3")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64], ids=str)
def test_the_result_keeps_the_logits_dtype_and_device(dtype):
    logits = seeded(2, 6, seed=7, dtype=dtype)
    got = check(logits, [[0, 5], [1, 2, 3]], f"{dtype}")
    assert got.device == logits.device, f"result on {got.device}, logits on {logits.device}"


@pytest.mark.clause("PT29.4")
@pytest.mark.parametrize("seed", [11, 12, 13])
def test_random_sets_match_the_per_row_check(seed):
    generator = torch.Generator().manual_seed(seed)
    B, V = 5, 12
    sets = [
        torch.randint(0, V, (int(torch.randint(0, 2 * V, (1,), generator=generator)),),
                      generator=generator).tolist()
        for _ in range(B)
    ]  # fmt: skip
    check(seeded(B, V, seed=seed), sets, f"seed {seed}")


def torch_calls(V: int) -> int:
    sets = [list(range(0, V, 2)), [V - 1], list(range(V))]  # sets that grow with V
    allowed_ids, offsets = flat(sets)
    logits = seeded(3, V, seed=V)
    with CountedCalls() as counter:  # in judge mode, counted by the worker
        drill.apply_allowed_tokens(logits, allowed_ids, offsets)
    return counter.calls


@pytest.mark.clause("PT29.6")
@pytest.mark.parametrize("V", [64, 512])
def test_the_mask_does_not_loop_over_the_vocabulary(V):
    small, large = torch_calls(8), torch_calls(V)

    assert large <= small, f"{small} torch calls for V=8, {large} for V={V}: a loop over V"


@pytest.mark.clause("PT29.1")
def test_the_arguments_bind_by_name_in_the_kits_order():
    logits = seeded(2, 4, seed=8)
    allowed_ids, offsets = flat([[1], [0, 3]])
    assert_binds(drill.apply_allowed_tokens, logits, allowed_ids, offsets)
    assert_binds(
        drill.apply_allowed_tokens, offsets=offsets, allowed_ids=allowed_ids, logits=logits
    )
    by_name = drill.apply_allowed_tokens(offsets=offsets, allowed_ids=allowed_ids, logits=logits)
    assert by_name[0, 1] == logits[0, 1] and by_name[1, 3] == logits[1, 3], "called by name"
    assert torch.equal(by_name, drill.apply_allowed_tokens(logits, allowed_ids, offsets))


# ---- rejection: valid in every respect but one, before any work ----


def rejected(allowed: list[int], offsets: list[int], argument: str, values=()) -> None:
    call = {"logits": seeded(3, 6, seed=9), "allowed_ids": ints(allowed), "offsets": ints(offsets)}
    with inputs_untouched(**call):
        assert_rejects(
            lambda: drill.apply_allowed_tokens(**call), BAD_VALUE, argument, values=values
        )


@pytest.mark.clause("PT29.7")
@pytest.mark.parametrize("bad", [-1, 6, 100], ids=["negative", "V", "far past V"])
@pytest.mark.parametrize("position", [2, 4], ids=["row 1's set", "row 2's set"])
def test_an_id_outside_the_vocabulary_in_any_row_is_rejected(bad, position):
    allowed = [0, 3, 1, 5, 2]  # rows: [0, 3], [1, 5], [2]
    allowed[position] = bad
    rejected(allowed, [0, 2, 4, 5], "allowed_ids", values=[bad])


@pytest.mark.clause("PT29.8")
@pytest.mark.parametrize(
    "offsets",
    [[1, 2, 4, 5], [0, 4, 2, 5], [0, 2, 4, 4], [0, 2, 4, 6], [0, 2, 5], [0, 2, 3, 4, 5]],
    ids=["first is 1", "decreasing", "last short of M", "last past M", "B entries",
         "B + 2 entries"],
)  # fmt: skip
def test_malformed_offsets_are_rejected(offsets):
    rejected([0, 3, 1, 5, 2], offsets, "offsets")
