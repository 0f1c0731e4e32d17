"""PT23 reorder_layer_caches(caches, parent_rows): every layer's tensors gathered by parent.

caches is a list of layers, each a tuple of tensors with the batch as dim 0 (K, V and, in
some tests, a per-row sequence-length tensor). The oracle is one row copy at a time; the
end-to-end check decodes one step from the reordered cache of a tiny attention model and
compares it with recomputing every child's full prefix.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import BAD_VALUE, assert_close, assert_rejects, candidate, test_device
from gptlab_testkit.objects import assert_own_storage
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_PT23_MODULE")

pytestmark = [pytest.mark.owner("pt23"), pytest.mark.contract]


def long(values: list[int]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device()).reshape(len(values))


def layer_caches(layers: int, B: int, seed: int, lengths: list[int] | None = None):
    """[(k [B, 2, 5, 3], v [B, 2, 5, 3](, lengths [B]))] per layer, every value distinct."""
    caches = []
    for layer in range(layers):
        k, v = (
            seeded(B, 2, 5, 3, seed=seed + 2 * layer),
            seeded(B, 2, 5, 3, seed=seed + 2 * layer + 1),
        )
        caches.append((k, v) if lengths is None else (k, v, long(lengths)))
    return caches


def loop_reorder(caches, parents: list[int]):
    """One child row at a time, from clones of the parents' rows."""
    out = []
    for layer in caches:
        out.append(tuple(torch.stack([t[p].clone() for p in parents]) if parents
                         else t[:0].clone() for t in layer))  # fmt: skip
    return out


def check(caches, parents: list[int], what: str) -> None:
    want = loop_reorder(caches, parents)

    got = drill.reorder_layer_caches(caches, long(parents))

    assert len(got) == len(caches), f"{what}: {len(got)} layers back, {len(caches)} given"
    for index, (layer, wanted) in enumerate(zip(got, want, strict=True)):
        assert len(layer) == len(wanted), f"{what}: layer {index} lost or gained a tensor"
        for j, (tensor, expected) in enumerate(zip(layer, wanted, strict=True)):
            at = f"{what}: layer {index}, tensor {j}"
            assert tensor.shape == expected.shape, f"{at}: shape {tuple(tensor.shape)}"
            assert tensor.dtype == expected.dtype, f"{at}: dtype {tensor.dtype}"
            assert torch.equal(tensor, expected), f"{at}: rows differ from the parents' rows"


@pytest.mark.clause("PT23.1")
def test_the_arguments_bind_by_name_in_the_kits_order():
    caches, parents = layer_caches(2, 3, seed=1), long([2, 0, 1])
    assert_binds(drill.reorder_layer_caches, caches, parents)
    assert_binds(drill.reorder_layer_caches, parent_rows=parents, caches=caches)
    by_name = drill.reorder_layer_caches(parent_rows=parents, caches=caches)
    for layer, wanted in zip(by_name, loop_reorder(caches, [2, 0, 1]), strict=True):
        assert all(map(torch.equal, layer, wanted)), "called by name: rows differ"


@pytest.mark.clause("PT23.4")
def test_a_permutation_moves_every_tensor_of_every_layer():
    check(layer_caches(3, 4, seed=2), [3, 1, 0, 2], "three layers, parents 3, 1, 0, 2")


@pytest.mark.clause("PT23.4")
@pytest.mark.parametrize("parents", [[1, 1, 0], [2, 2, 2], [0, 2, 0]], ids=str)
def test_duplicate_parents_copy_one_row_into_several_children(parents):
    check(layer_caches(2, 3, seed=3), parents, f"parents {parents}")


@pytest.mark.clause("PT23.2", "PT23.4")
@pytest.mark.parametrize("parents", [[4], [3, 0, 3, 1, 2, 2]], ids=["fewer", "more"])
def test_the_new_batch_may_be_smaller_or_larger_than_the_old(parents):
    check(layer_caches(2, 5, seed=4), parents, f"B = 5 -> {len(parents)}")


@pytest.mark.clause("PT23.2")
@pytest.mark.parametrize("layers", [1, 3])
def test_an_empty_batch_of_children_gives_empty_tensors(layers):
    check(layer_caches(layers, 3, seed=5, lengths=[4, 2, 5]), [], f"{layers} layers, no child")


@pytest.mark.clause("PT23.3", "PT23.4")
def test_sequence_lengths_travel_with_their_rows_and_keep_their_dtype():
    caches = layer_caches(2, 4, seed=6, lengths=[5, 2, 4, 1])
    caches[1] = tuple(t.to(torch.bfloat16) if t.is_floating_point() else t for t in caches[1])
    check(caches, [2, 2, 0, 3], "lengths [5, 2, 4, 1] with a bf16 layer")


@pytest.mark.clause("PT23.5")
@pytest.mark.parametrize("layout", ["transposed", "slice of a larger buffer", "strided batch"])
def test_noncontiguous_caches_are_gathered_by_their_logical_layout(layout):
    views = {
        "transposed": lambda s: seeded(4, 5, 2, 3, seed=s).transpose(1, 2),
        "slice of a larger buffer": lambda s: seeded(4, 2, 9, 3, seed=s)[:, :, 2:7],
        "strided batch": lambda s: seeded(8, 2, 5, 3, seed=s)[::2],
    }
    caches = [(views[layout](7), views[layout](8)), (views[layout](9), views[layout](10))]
    assert not caches[0][0].is_contiguous()
    check(caches, [3, 0, 0, 2], layout)


@pytest.mark.clause("PT23.4")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_parents_match_the_row_by_row_copy(data):
    B = data.draw(st.integers(1, 4), label="B")
    layers = data.draw(st.integers(1, 3), label="layers")
    parents = data.draw(st.lists(st.integers(0, B - 1), max_size=5), label="parents")
    seed = data.draw(st.integers(0, 2**16), label="seed")
    check(layer_caches(layers, B, seed=seed), parents, f"B={B}, parents {parents}")


@pytest.mark.clause("PT23.6")
@pytest.mark.parametrize("parents", [[1, 1, 0], [2, 2, 2], [0, 1, 2]], ids=str)
def test_children_of_one_parent_are_independent_before_an_in_place_append(parents):
    caches = layer_caches(2, 3, seed=11)
    got = drill.reorder_layer_caches(caches, long(parents))
    want = loop_reorder(caches, parents)

    with torch.inference_mode():
        for layer in got:
            for tensor in layer:
                tensor[0].fill_(9.0)  # child 0 appends in place; its sibling must not see it

    for index, (layer, wanted) in enumerate(zip(got, want, strict=True)):
        for tensor, expected in zip(layer, wanted, strict=True):
            assert torch.equal(tensor[1:], expected[1:]), (
                f"layer {index}: a write into child 0 reached another child"
            )
    # in a judged run the writes above reach only the test's copies: the children's own
    # memory is then the worker's word (storage identity), and the test is advisory
    for index, (layer, old) in enumerate(zip(got, caches, strict=True)):
        for tensor, parent in zip(layer, old, strict=True):
            assert_own_storage(tensor, parent, f"layer {index}: a child views the old cache")


# ---- the next decode step from the reordered cache equals a full-prefix recompute ----

C, VOCAB = 8, 13


def model(layers: int) -> tuple[torch.Tensor, list[tuple[torch.Tensor, ...]]]:
    """A tiny single-head residual attention stack: embedding and (Wq, Wk, Wv) per layer."""
    embed = seeded(VOCAB, C, seed=20)
    weights = [tuple(seeded(C, C, seed=21 + 3 * i + j) / math.sqrt(C) for j in range(3))
               for i in range(layers)]  # fmt: skip
    return embed, weights


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    scores = q @ k.transpose(-1, -2) / math.sqrt(C)
    if causal:
        T = q.shape[-2]
        allowed = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~allowed, float("-inf"))
    return scores.softmax(-1) @ v


def prefill(weights, ids: torch.Tensor):
    """(last hidden [B, C], caches [(k [B, 1, T, C], v [B, 1, T, C])] per layer)."""
    embed, layers = weights
    x, caches = embed[ids][:, None], []  # [B, 1, T, C]
    for wq, wk, wv in layers:
        k, v = x @ wk, x @ wv
        x = x + attend(x @ wq, k, v, causal=True)
        caches.append((k, v))
    return x[:, 0, -1], caches


def decode(weights, tokens: torch.Tensor, caches):
    """Last hidden [B, C] after one new token per row, attending to its cache."""
    embed, layers = weights
    x = embed[tokens][:, None, None]  # [B, 1, 1, C]
    for (wq, wk, wv), (k_cache, v_cache) in zip(layers, caches, strict=True):
        k = torch.cat([k_cache, x @ wk], dim=2)
        v = torch.cat([v_cache, x @ wv], dim=2)
        x = x + attend(x @ wq, k, v, causal=False)
    return x[:, 0, -1]


@pytest.mark.clause("PT23.7")
@pytest.mark.parametrize("parents", [[2, 0, 2], [1, 1, 1], [0, 2]], ids=str)
def test_the_next_decode_step_equals_recomputing_each_childs_full_prefix(parents):
    weights = model(layers=3)
    prompts = torch.tensor([[1, 4, 2, 7], [3, 3, 9, 0], [12, 5, 6, 8]], device=test_device())
    _, caches = prefill(weights, prompts)
    rows, tokens = long(parents), long([5, 1, 11][: len(parents)])

    stepped = decode(weights, tokens, drill.reorder_layer_caches(caches, rows))

    full, _ = prefill(weights, torch.cat([prompts[rows], tokens[:, None]], dim=1))
    assert_close(stepped, full)


# ---- rejection: valid in every respect but one, before anything is gathered ----


def rejected(caches, parents: torch.Tensor, argument: str, values=()) -> None:
    tensors = [t for layer in caches if isinstance(layer, tuple) for t in layer]
    kept = {f"tensor {i}": t for i, t in enumerate(tensors)}
    with inputs_untouched(parent_rows=parents, **kept):
        assert_rejects(
            lambda: drill.reorder_layer_caches(caches, parents), BAD_VALUE, argument, values=values
        )


@pytest.mark.clause("PT23.8")
@pytest.mark.parametrize("missing", ["None layer", "empty layer", "short batch"])
def test_a_missing_layer_is_rejected(missing):
    caches = layer_caches(3, 3, seed=30)
    if missing == "None layer":
        caches[2] = None
    elif missing == "empty layer":
        caches[1] = ()
    else:  # the last layer was left behind at another batch size
        caches[2] = (caches[2][0][:2], caches[2][1][:2])
    rejected(caches, long([0, 2, 1]), "caches")


@pytest.mark.clause("PT23.9")
@pytest.mark.parametrize("bad", [3, 7, -1], ids=["B", "past B", "negative"])
def test_a_parent_outside_the_old_batch_is_rejected(bad):
    rejected(layer_caches(2, 3, seed=31), long([0, 2, bad]), "parent_rows", values=(bad,))
