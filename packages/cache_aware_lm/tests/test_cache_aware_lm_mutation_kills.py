"""Contract clauses no other test pinned down, found by mutation testing.

The EOS rule holds for prompts longer than one token, whose batch size differs from
their length: each row, once it has emitted EOS, keeps emitting it, and generation stops
as soon as every row has. Positions are contiguous within each row also in a call
without a cache.
"""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import test_device
from gptlab_testkit.models import cache_aware_modules
from gptlab_testkit.oracles import inputs_untouched

MODULES = cache_aware_modules()
# The candidates these contract tests grade: M03 and its advanced branch (over M02).
GRADED_FOR = ("CACHE_AWARE_LM_MODULE", "CACHE_AWARE_MODERN_MODULE")
pytestmark = [
    pytest.mark.contract,
    pytest.mark.parametrize("lm", list(MODULES.values()), ids=list(MODULES)),
]


def _with_eos_rule(greedy: torch.Tensor, prompt_length: int, eos: int) -> torch.Tensor:
    """Oracle: the EOS rule applied to a plain greedy continuation (rows are independent,
    so a row's tokens up to its first EOS do not depend on the other rows finishing)."""
    rows = []
    for row in greedy[:, prompt_length:].tolist():
        first = row.index(eos) if eos in row else len(row)
        rows.append(row[: first + 1] + [eos] * (len(row) - first - 1))
    finished_at = [row.index(eos) if eos in row else len(row) - 1 for row in rows]
    steps = max(finished_at) + 1
    continuation = torch.tensor([row[:steps] for row in rows], device=greedy.device)
    return torch.cat([greedy[:, :prompt_length], continuation], dim=1)


@pytest.mark.owner("eos_context")
def test_eos_rule_after_a_multi_token_prompt(lm):
    model = lm.make_test_model().to(test_device())
    device = test_device()
    ids = torch.tensor([[3, 1, 4], [1, 5, 9]], device=device)  # B = 2 rows of T = 3
    positions = torch.tensor([[0, 1, 2], [4, 5, 6]], device=device)
    greedy = model.generate(ids, positions, 6)
    eos = int(greedy[0, 3])  # row 0 finishes at its first new token
    expected = _with_eos_rule(greedy, 3, eos)
    assert torch.equal(model.generate(ids, positions, 6, eos_token_id=eos), expected)


@pytest.mark.rejection
@pytest.mark.owner("cache_metadata")
def test_uncached_call_rejects_positions_that_jump_within_a_row(lm):
    """Positions are contiguous within each row, also without a cache (broken on row 1)."""
    model = lm.make_test_model().to(test_device())
    device = test_device()
    ids = torch.tensor([[1, 2, 3], [4, 5, 6]], device=device)
    positions = torch.tensor([[0, 1, 2], [0, 2, 3]], device=device)
    with inputs_untouched(input_ids=ids, positions=positions), pytest.raises(ValueError):
        model(ids, positions, use_cache=True)
