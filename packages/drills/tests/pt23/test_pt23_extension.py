"""PT23 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_PT23_MODULE")

pytestmark = [pytest.mark.owner("pt23"), pytest.mark.extension]


def long(values: list[int]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device())


def caches() -> list[tuple[torch.Tensor, ...]]:
    return [(seeded(3, 2, 4, 2, seed=2 * i), seeded(3, 2, 4, 2, seed=2 * i + 1)) for i in range(2)]


@pytest.mark.clause("PT23.10")
@pytest.mark.parametrize("parents", [[0, 1, 2], [2, 2, 0]], ids=["identity", "duplicates"])
def test_the_old_cache_is_only_read_and_never_shares_memory_with_a_child(parents):
    old = caches()
    tensors = {
        f"layer {i} tensor {j}": t for i, layer in enumerate(old) for j, t in enumerate(layer)
    }
    with inputs_untouched(**tensors):
        got = drill.reorder_layer_caches(old, long(parents))
        with torch.inference_mode():
            for layer in got:
                for tensor in layer:
                    tensor.fill_(7.0)  # every child appends: the old cache must not see it


@pytest.mark.clause("PT23.11")
@pytest.mark.parametrize(
    ("argument", "bad", "errors"),
    [
        ("parent_rows", lambda c: long([0, 1, 2]).float(), WRONG_KIND),
        ("parent_rows", lambda c: long([0, 1, 0]).bool(), WRONG_KIND),
        ("parent_rows", lambda c: long([[0, 1, 2]]), BAD_VALUE),
        ("caches", lambda c: [], BAD_VALUE),
        ("caches", lambda c: c[0][0], WRONG_KIND),
        ("caches", lambda c: [c[0], (c[1][0], [[0.0]])], WRONG_KIND),
        ("caches", lambda c: [c[0], (torch.tensor(1.0, device=test_device()),)], BAD_VALUE),
    ],
    ids=["float parents", "bool parents", "2-D parents", "no layers", "a tensor as caches",
         "a list in a layer", "a 0-d tensor in a layer"],
)  # fmt: skip
def test_inputs_the_contract_leaves_undefined_are_rejected(argument, bad, errors):
    call: dict[str, object] = {"caches": caches(), "parent_rows": long([0, 2, 1])}
    call[argument] = bad(call["caches"])
    parents = call["parent_rows"]
    kept = {"parent_rows": parents} if isinstance(parents, torch.Tensor) else {}
    with inputs_untouched(**kept):
        assert_rejects(lambda: drill.reorder_layer_caches(**call), errors, argument)
