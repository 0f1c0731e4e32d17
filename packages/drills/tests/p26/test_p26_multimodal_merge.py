"""P26 merge_multimodal_embeddings(input_ids, inputs_embeds, multimodal_embeddings,
placeholder_token_id): each request's encoder rows over its own placeholders."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P26_MODULE")

pytestmark = [pytest.mark.owner("p26"), pytest.mark.contract]

IMAGE = 9  # the placeholder token id


def ids(rows: list[list[int]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long, device=test_device())


def encoder_rows(counts: list[int], C: int, seed: int) -> list[torch.Tensor]:
    return [seeded(n, C, seed=seed + b) + 100 * (b + 1) for b, n in enumerate(counts)]


def loop_merge(input_ids, embeds, rows, placeholder=IMAGE):
    """Row by row, position by position: the next unused encoder row of this request."""
    out = embeds.clone()
    for b, row in enumerate(input_ids.tolist()):
        used = 0
        for t, token in enumerate(row):
            if token == placeholder:
                out[b, t] = rows[b][used]
                used += 1
    return out


def merge(input_ids, embeds, rows, placeholder=IMAGE):
    got = drill.merge_multimodal_embeddings(input_ids, embeds, rows, placeholder)
    assert got.shape == embeds.shape and got.dtype == embeds.dtype, f"{got.dtype} {got.shape}"
    return got


def test_each_requests_rows_fill_its_own_placeholders_in_order():
    input_ids = ids([[1, IMAGE, IMAGE, IMAGE, 2], [3, 4, IMAGE, 5, 6]])
    embeds, rows = seeded(2, 5, 4, seed=1), encoder_rows([3, 1], 4, seed=2)

    got = merge(input_ids, embeds, rows)

    assert torch.equal(got, loop_merge(input_ids, embeds, rows)), "merge vs loop oracle"


def test_two_images_in_one_prompt_fill_separate_runs_in_order():
    input_ids = ids([[IMAGE, IMAGE, 7, 8, IMAGE, IMAGE, IMAGE, 2]])
    embeds, rows = seeded(1, 8, 3, seed=3), encoder_rows([5], 3, seed=4)

    got = merge(input_ids, embeds, rows)

    assert torch.equal(got[0, [0, 1, 4, 5, 6]], rows[0]), "encoder rows out of order"
    assert torch.equal(got[0, [2, 3, 7]], embeds[0, [2, 3, 7]]), "a text token changed"


def test_a_text_only_request_beside_an_image_request_keeps_its_text():
    input_ids = ids([[1, 2, 3, 4], [IMAGE, IMAGE, 5, 6]])
    embeds, rows = seeded(2, 4, 3, seed=5), encoder_rows([0, 2], 3, seed=6)

    got = merge(input_ids, embeds, rows)

    assert torch.equal(got, loop_merge(input_ids, embeds, rows))


@pytest.mark.parametrize("rows", [None, "empty"], ids=["None", "empty per request"])
def test_a_text_only_batch_passes_through_as_the_callers_own_tensor(rows):
    input_ids, embeds = ids([[1, 2, 3], [4, 5, 6]]), seeded(2, 3, 4, seed=7)
    if rows == "empty":
        rows = encoder_rows([0, 0], 4, seed=8)
    before = embeds.clone()

    got = merge(input_ids, embeds, rows)
    assert torch.equal(got, before), "a text-only batch changed"
    got = got.clone() if got.is_inference() else got
    got.fill_(0.0)

    assert torch.equal(embeds, before), "the result shares memory with inputs_embeds"


def test_encoder_rows_of_another_float_dtype_take_the_text_dtype():
    input_ids = ids([[IMAGE, 1], [2, IMAGE]])
    embeds = seeded(2, 2, 3, seed=9, dtype=torch.bfloat16)
    rows = encoder_rows([1, 1], 3, seed=10)  # fp32 from the encoder

    got = merge(input_ids, embeds, rows)

    assert torch.equal(got[0, 0], rows[0][0].to(torch.bfloat16))
    assert torch.equal(got[1, 1], rows[1][0].to(torch.bfloat16))


def test_inputs_are_only_read():
    input_ids = ids([[1, IMAGE, IMAGE], [IMAGE, 2, 3]])
    embeds, rows = seeded(2, 3, 4, seed=11), encoder_rows([2, 1], 4, seed=12)
    named = {f"multimodal_embeddings[{b}]": r for b, r in enumerate(rows)}
    with inputs_untouched(input_ids=input_ids, inputs_embeds=embeds, **named):
        drill.merge_multimodal_embeddings(input_ids, embeds, rows, IMAGE)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_batch_of_prompts_matches_the_loop_oracle(data):
    B, T, C = (
        data.draw(st.integers(1, n), label=name) for n, name in ((3, "B"), (6, "T"), (3, "C"))
    )
    tokens = st.sampled_from([IMAGE, 1, 2, 3])
    rows_ids = [[data.draw(tokens) for _ in range(T)] for _ in range(B)]
    seed = data.draw(st.integers(0, 2**16), label="seed")
    input_ids, embeds = ids(rows_ids), seeded(B, T, C, seed=seed)
    rows = encoder_rows([row.count(IMAGE) for row in rows_ids], C, seed=seed + 1)

    got = merge(input_ids, embeds, rows)

    assert torch.equal(got, loop_merge(input_ids, embeds, rows)), "merge vs loop oracle"


# ---- rejection: valid in every respect but one ----


def rejected(input_ids, embeds, rows, argument, placeholder=IMAGE):
    named = {f"rows{b}": r for b, r in enumerate(rows or [])}
    with inputs_untouched(input_ids=input_ids, inputs_embeds=embeds, **named):
        assert_rejects(
            lambda: drill.merge_multimodal_embeddings(input_ids, embeds, rows, placeholder),
            ValueError,
            argument,
        )


@pytest.mark.parametrize("counts", [[3, 1], [1, 3]], ids=["row 0 long", "row 1 long"])
def test_counts_that_match_only_in_total_are_rejected(counts):
    # 2 + 2 placeholders, 4 encoder rows in all: a batch-wide count would let rows cross over.
    input_ids = ids([[IMAGE, IMAGE, 1, 2], [3, IMAGE, IMAGE, 4]])
    rejected(
        input_ids, seeded(2, 4, 3, seed=13), encoder_rows(counts, 3, 14), "multimodal_embeddings"
    )


def test_fewer_encoder_rows_than_placeholders_in_one_request_are_rejected():
    input_ids = ids([[IMAGE, 1, 2], [IMAGE, IMAGE, 3]])
    rejected(
        input_ids, seeded(2, 3, 3, seed=15), encoder_rows([1, 1], 3, 16), "multimodal_embeddings"
    )


def test_one_tensor_per_request_is_required():
    input_ids = ids([[IMAGE, 1], [2, 3]])
    rejected(input_ids, seeded(2, 2, 3, seed=17), encoder_rows([1], 3, 18), "multimodal_embeddings")


def test_encoder_rows_of_another_width_are_rejected():
    input_ids = ids([[IMAGE, 1], [2, IMAGE]])
    rows = [seeded(1, 3, seed=19), seeded(1, 5, seed=20)]
    rejected(input_ids, seeded(2, 2, 3, seed=21), rows, "multimodal_embeddings")


def test_no_encoder_rows_for_a_batch_with_placeholders_is_rejected():
    rejected(ids([[1, 2], [IMAGE, 3]]), seeded(2, 2, 3, seed=22), None, "multimodal_embeddings")


def test_embeddings_for_another_prompt_length_are_rejected():
    input_ids = ids([[IMAGE, 1, 2], [3, 4, 5]])
    rows = encoder_rows([1, 0], 3, 23)
    rejected(input_ids, seeded(2, 4, 3, seed=24), rows, ("inputs_embeds", "input_ids"))
