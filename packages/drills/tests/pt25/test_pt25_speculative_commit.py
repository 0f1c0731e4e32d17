"""PT25 commit_speculation(draft [B, K], accepted [B], bonus [B], positions [B])
-> (tokens [N], row_ids [N], new_positions [B], commit_mask [B, K])."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
import torch

from gptlab_testkit import BAD_VALUE, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import assert_binds, inputs_untouched

drill = candidate("DRILL_PT25_MODULE")

pytestmark = [pytest.mark.owner("pt25"), pytest.mark.contract]


def ints(values, dtype: torch.dtype = torch.long) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype, device=test_device())


@dataclass
class Request:
    """One request's state machine: each accepted draft, then its bonus, moves it one step."""

    position: int
    committed: list[int] = field(default_factory=list)
    kept_entries: list[bool] = field(default_factory=list)

    def verify(self, drafted: list[int], accepted: int, bonus: int) -> None:
        for k, token in enumerate(drafted):
            kept = k < accepted  # a draft after the first rejection is discarded
            self.kept_entries.append(kept)
            if kept:
                self.committed.append(token)
                self.position += 1
        self.committed.append(bonus)  # exactly one bonus, whatever was accepted
        self.position += 1


def oracle(draft, accepted, bonus, positions):
    requests = [Request(p) for p in positions]
    for request, drafted, a, b in zip(requests, draft, accepted, bonus, strict=True):
        request.verify(drafted, a, b)
    tokens = [t for r in requests for t in r.committed]
    row_ids = [i for i, r in enumerate(requests) for _ in r.committed]
    return tokens, row_ids, [r.position for r in requests], [r.kept_entries for r in requests]


def check(draft, accepted, bonus, positions, what: str, dtype=torch.long, K=None):
    K = len(draft[0]) if draft else (K or 0)
    draft_t = ints(draft, dtype).reshape(len(draft), K)
    got = drill.commit_speculation(draft_t, ints(accepted), ints(bonus, dtype), ints(positions))
    assert isinstance(got, tuple) and len(got) == 4, f"{what}: want a 4-tuple, got {type(got)}"
    tokens, row_ids, new_positions, mask = got
    want = oracle(draft, accepted, bonus, positions)
    N, B = len(want[0]), len(draft)
    assert tuple(tokens.shape) == (N,) and tuple(row_ids.shape) == (N,), (
        f"{what}: tokens {tuple(tokens.shape)}, row_ids {tuple(row_ids.shape)}, want ({N},)"
    )
    assert tuple(new_positions.shape) == (B,), f"{what}: new_positions {new_positions.shape}"
    assert tuple(mask.shape) == (B, K) and mask.dtype == torch.bool, f"{what}: mask {mask}"
    for name, tensor in (("tokens", tokens), ("row_ids", row_ids), ("positions", new_positions)):
        assert not tensor.is_floating_point() and tensor.dtype != torch.bool, f"{name} {tensor}"
    assert tokens.tolist() == want[0], f"{what}: tokens {tokens.tolist()}, want {want[0]}"
    assert row_ids.tolist() == want[1], f"{what}: row_ids {row_ids.tolist()}, want {want[1]}"
    assert new_positions.tolist() == want[2], f"{what}: positions {new_positions.tolist()}"
    assert mask.tolist() == want[3], f"{what}: commit mask {mask.tolist()}, want {want[3]}"
    return got


DRAFT = [[11, 12, 13], [21, 22, 23], [31, 32, 33], [41, 42, 43]]


@pytest.mark.clause("PT25.2", "PT25.4", "PT25.5", "PT25.6")
def test_mixed_acceptance_commits_row_after_row_with_one_bonus_each():
    tokens, *_ = check(DRAFT, [2, 0, 3, 1], [91, 92, 93, 94], [5, 0, 17, 8], "mixed")
    assert tokens.tolist() == [11, 12, 91, 92, 31, 32, 33, 93, 41, 94], "the oracle itself"


@pytest.mark.clause("PT25.4", "PT25.6")
@pytest.mark.parametrize("accepted", [[0, 0, 0, 0], [3, 3, 3, 3]], ids=["none", "all"])
def test_acceptance_zero_and_k_in_every_row(accepted):
    check(DRAFT, accepted, [91, 92, 93, 94], [1, 2, 3, 4], f"accepted {accepted}")


@pytest.mark.clause("PT25.4", "PT25.5", "PT25.6")
@pytest.mark.parametrize("row", [1, 3])
def test_a_later_row_alone_accepting_everything(row):
    accepted = [0, 0, 0, 0]
    accepted[row] = 3
    check(DRAFT, accepted, [91, 92, 93, 94], [10, 20, 30, 40], f"row {row} accepts all")


@pytest.mark.clause("PT25.2", "PT25.4", "PT25.5")
def test_no_drafted_tokens_commits_only_the_bonuses():
    check([[], [], []], [0, 0, 0], [7, 8, 9], [3, 0, 5], "K = 0")


@pytest.mark.clause("PT25.2")
def test_an_empty_batch_commits_nothing():
    check([], [], [], [], "B = 0", K=3)


@pytest.mark.clause("PT25.3", "PT25.4")
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64], ids=str)
def test_token_ids_keep_their_integer_values_and_the_drafts_device(dtype):
    tokens, row_ids, new_positions, mask = check(
        DRAFT, [1, 2, 0, 3], [91, 92, 93, 94], [0, 4, 9, 2], f"{dtype} tokens", dtype
    )
    assert tokens.dtype == dtype, f"tokens {tokens.dtype}, draft {dtype}"
    device = torch.device(test_device()).type
    for tensor in (tokens, row_ids, new_positions, mask):
        assert tensor.device.type == device, f"a result on {tensor.device}, draft on {device}"


@pytest.mark.clause("PT25.4", "PT25.5", "PT25.6")
@pytest.mark.parametrize("seed", [1, 5, 9])
def test_random_batches_match_the_per_request_state_machine(seed):
    generator = torch.Generator().manual_seed(seed)
    B, K = 6, 4
    draft = torch.randint(0, 1000, (B, K), generator=generator).tolist()
    accepted = torch.randint(0, K + 1, (B,), generator=generator).tolist()
    bonus = torch.randint(0, 1000, (B,), generator=generator).tolist()
    positions = torch.randint(0, 500, (B,), generator=generator).tolist()
    check(draft, accepted, bonus, positions, f"seed {seed}")


@pytest.mark.clause("PT25.1")
def test_the_arguments_bind_by_name_in_the_kits_order():
    call = {"draft": ints(DRAFT), "accepted": ints([1, 0, 2, 3]), "bonus": ints([1, 2, 3, 4]),
            "positions": ints([0, 1, 2, 3])}  # fmt: skip
    assert_binds(drill.commit_speculation, *call.values())
    assert_binds(drill.commit_speculation, **dict(reversed(call.items())))
    tokens, row_ids, new_positions, _ = drill.commit_speculation(**dict(reversed(call.items())))
    assert tokens.tolist() == [11, 1, 2, 31, 32, 3, 41, 42, 43, 4], f"by name: {tokens.tolist()}"
    assert new_positions.tolist() == [2, 2, 5, 7] and row_ids.tolist()[:2] == [0, 0]


# ---- rejection: valid in every respect but one, before any work ----


def rejected(accepted, positions, argument: str, values=(), dtype=torch.long) -> None:
    call = {"draft": ints(DRAFT), "accepted": ints(accepted), "bonus": ints([91, 92, 93, 94]),
            "positions": ints(positions, dtype)}  # fmt: skip
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.commit_speculation(**call), BAD_VALUE, argument, values=values)


@pytest.mark.clause("PT25.7")
@pytest.mark.parametrize("bad", [-1, 4], ids=["negative", "K + 1"])
@pytest.mark.parametrize("row", [1, 3])
def test_an_acceptance_outside_zero_to_k_in_any_row_is_rejected(bad, row):
    accepted = [1, 2, 0, 3]
    accepted[row] = bad
    rejected(accepted, [0, 1, 2, 3], "accepted", values=[bad])


INT32_MAX, INT64_MAX = 2**31 - 1, 2**63 - 1


@pytest.mark.clause("PT25.8")
@pytest.mark.parametrize(
    ("dtype", "top"), [(torch.int32, INT32_MAX), (torch.int64, INT64_MAX)], ids=str
)
@pytest.mark.parametrize("row", [1, 3])
def test_a_new_position_past_the_dtypes_range_in_any_row_is_rejected(dtype, top, row):
    positions = [0, 1, 2, 3]
    positions[row] = top - 2  # accepted 2 plus the bonus: top + 1
    accepted = [1, 0, 3, 2] if row == 1 else [1, 2, 0, 2]
    accepted[row] = 2
    rejected(accepted, positions, "positions", values=[top - 2], dtype=dtype)


@pytest.mark.clause("PT25.5", "PT25.8")
@pytest.mark.parametrize(("dtype", "top"), [(torch.int32, INT32_MAX)], ids=str)
def test_a_new_position_landing_exactly_on_the_dtypes_largest_value_is_accepted(dtype, top):
    positions = ints([0, top - 3, 5, 6], dtype)
    got = drill.commit_speculation(ints(DRAFT), ints([1, 2, 0, 3]), ints([1, 2, 3, 4]), positions)
    assert got[2].tolist() == [2, top, 6, 10], f"new positions {got[2].tolist()}"


@pytest.mark.clause("PT25.3", "PT25.4")
def test_the_tokens_keep_the_drafts_dtype_when_the_bonus_is_wider():
    draft, bonus = ints(DRAFT, torch.int32), ints([91, 92, 93, 94], torch.int64)
    tokens, *_ = drill.commit_speculation(draft, ints([1, 0, 3, 2]), bonus, ints([0, 0, 0, 0]))
    assert tokens.dtype == torch.int32, f"int32 drafts with an int64 bonus gave {tokens.dtype}"
    assert tokens.tolist() == [11, 91, 92, 31, 32, 33, 93, 41, 42, 94], f"{tokens.tolist()}"
