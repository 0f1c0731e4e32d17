"""P26 merge_multimodal_embeddings(input_ids, inputs_embeds, multimodal_embeddings,
placeholder_token_id): each request's encoder rows over its own placeholders."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import (
    BAD_VALUE,
    WRONG_KIND,
    assert_rejects,
    candidate,
    shares_storage,
    test_device,
)
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P26_MODULE")

pytestmark = [pytest.mark.owner("p26")]  # each test says contract or extension

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


@pytest.mark.contract
@pytest.mark.clause("P26.1", "P26.2", "P26.4")
def test_each_requests_rows_fill_its_own_placeholders_in_order():
    input_ids = ids([[1, IMAGE, IMAGE, IMAGE, 2], [3, 4, IMAGE, 5, 6]])
    embeds, rows = seeded(2, 5, 4, seed=1), encoder_rows([3, 1], 4, seed=2)

    # the oracle first: the call's writes cannot reach it
    want = loop_merge(input_ids, embeds, rows)
    got = merge(input_ids, embeds, rows)

    assert torch.equal(got, want), "merge vs loop oracle"


@pytest.mark.contract
@pytest.mark.clause("P26.4")
def test_two_images_in_one_prompt_fill_separate_runs_in_order():
    input_ids = ids([[IMAGE, IMAGE, 7, 8, IMAGE, IMAGE, IMAGE, 2]])
    embeds, rows = seeded(1, 8, 3, seed=3), encoder_rows([5], 3, seed=4)
    # the oracle's copies first: the call's writes cannot reach them
    embeds_given, rows_given = embeds.clone(), [row.clone() for row in rows]

    got = merge(input_ids, embeds, rows)

    assert torch.equal(got[0, [0, 1, 4, 5, 6]], rows_given[0]), "encoder rows out of order"
    assert torch.equal(got[0, [2, 3, 7]], embeds_given[0, [2, 3, 7]]), "a text token changed"


@pytest.mark.contract
@pytest.mark.clause("P26.4")
def test_a_text_only_request_beside_an_image_request_keeps_its_text():
    input_ids = ids([[1, 2, 3, 4], [IMAGE, IMAGE, 5, 6]])
    embeds, rows = seeded(2, 4, 3, seed=5), encoder_rows([0, 2], 3, seed=6)

    # the oracle first: the call's writes cannot reach it
    want = loop_merge(input_ids, embeds, rows)
    got = merge(input_ids, embeds, rows)

    assert torch.equal(got, want)


@pytest.mark.contract
@pytest.mark.clause("P26.5", "P26.11")
@pytest.mark.parametrize("rows", [None, "empty"], ids=["None", "empty per request"])
def test_a_text_only_batch_passes_through_as_the_callers_own_tensor(rows):
    input_ids, embeds = ids([[1, 2, 3], [4, 5, 6]]), seeded(2, 3, 4, seed=7)
    if rows == "empty":
        rows = encoder_rows([0, 0], 4, seed=8)
    before = embeds.clone()

    got = merge(input_ids, embeds, rows)
    assert torch.equal(got, before), "a text-only batch changed"
    # in judge mode the storages are the worker's, as it reported them
    assert not shares_storage(got, embeds), "the result shares memory with inputs_embeds"
    got = got.clone() if got.is_inference() else got
    got.fill_(0.0)

    assert torch.equal(embeds, before), "the result shares memory with inputs_embeds"


@pytest.mark.contract
@pytest.mark.clause("P26.3")
def test_encoder_rows_of_another_float_dtype_take_the_text_dtype():
    input_ids = ids([[IMAGE, 1], [2, IMAGE]])
    embeds = seeded(2, 2, 3, seed=9, dtype=torch.bfloat16)
    rows = encoder_rows([1, 1], 3, seed=10)  # fp32 from the encoder

    # the oracle first: the call's writes cannot reach it
    rows_given = [row.clone() for row in rows]
    got = merge(input_ids, embeds, rows)

    assert torch.equal(got[0, 0], rows_given[0][0].to(torch.bfloat16))
    assert torch.equal(got[1, 1], rows_given[1][0].to(torch.bfloat16))


@pytest.mark.contract
@pytest.mark.clause("P26.11")
def test_inputs_are_only_read():
    input_ids = ids([[1, IMAGE, IMAGE], [IMAGE, 2, 3]])
    embeds, rows = seeded(2, 3, 4, seed=11), encoder_rows([2, 1], 4, seed=12)
    named = {f"multimodal_embeddings[{b}]": r for b, r in enumerate(rows)}
    with inputs_untouched(input_ids=input_ids, inputs_embeds=embeds, **named):
        drill.merge_multimodal_embeddings(input_ids, embeds, rows, IMAGE)


@pytest.mark.contract
@pytest.mark.clause("P26.4")
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

    # the oracle first: the call's writes cannot reach it
    want = loop_merge(input_ids, embeds, rows)
    got = merge(input_ids, embeds, rows)

    assert torch.equal(got, want), "merge vs loop oracle"


# ---- rejection: valid in every respect but one ----

# A count mismatch may be named after the encoder rows or after the prompt's placeholders.
MISMATCH = ("multimodal_embeddings", "input_ids")


def rejected(input_ids, embeds, rows, argument, placeholder=IMAGE, errors=BAD_VALUE):
    """Rejected before anything is written; the message may name `multimodal_embeddings` or
    the mismatched argument (`argument`: one name or several)."""
    names = (argument,) if isinstance(argument, str) else tuple(argument)
    named = {f"rows{b}": r for b, r in enumerate(rows or []) if isinstance(r, torch.Tensor)}
    with inputs_untouched(input_ids=input_ids, inputs_embeds=embeds, **named):
        assert_rejects(
            lambda: drill.merge_multimodal_embeddings(input_ids, embeds, rows, placeholder),
            errors,
            names,
        )


@pytest.mark.contract
@pytest.mark.clause("P26.6")
@pytest.mark.parametrize("counts", [[3, 1], [1, 3]], ids=["row 0 long", "row 1 long"])
def test_counts_that_match_only_in_total_are_rejected(counts):
    # 2 + 2 placeholders, 4 encoder rows in all: a batch-wide count would let rows cross over.
    input_ids = ids([[IMAGE, IMAGE, 1, 2], [3, IMAGE, IMAGE, 4]])
    rejected(input_ids, seeded(2, 4, 3, seed=13), encoder_rows(counts, 3, 14), MISMATCH)


@pytest.mark.contract
@pytest.mark.clause("P26.6")
def test_fewer_encoder_rows_than_placeholders_in_one_request_are_rejected():
    input_ids = ids([[IMAGE, 1, 2], [IMAGE, IMAGE, 3]])
    rejected(input_ids, seeded(2, 3, 3, seed=15), encoder_rows([1, 1], 3, 16), MISMATCH)


@pytest.mark.contract
@pytest.mark.clause("P26.9")
def test_no_encoder_rows_for_a_batch_with_placeholders_is_rejected():
    rejected(ids([[1, 2], [IMAGE, 3]]), seeded(2, 2, 3, seed=22), None, MISMATCH)


@pytest.mark.contract
@pytest.mark.clause("P26.6")
@pytest.mark.parametrize("count", [3, 0], ids=["more rows", "no rows"])
def test_a_count_off_in_the_second_request_alone_is_rejected(count):
    input_ids = ids([[IMAGE, 1, 2], [IMAGE, IMAGE, 3]])
    rejected(input_ids, seeded(2, 3, 3, seed=30), encoder_rows([1, count], 3, 31), MISMATCH)


@pytest.mark.contract
@pytest.mark.clause("P26.2", "P26.3")
@pytest.mark.parametrize(
    ("text", "encoder"),
    [(torch.float64, torch.float32), (torch.float32, torch.float16)],
    ids=["float64 text, fp32 rows", "fp32 text, fp16 rows"],
)
def test_the_result_has_the_text_dtype_whatever_the_encoder_gives(text, encoder):
    input_ids = ids([[1, IMAGE, 2], [IMAGE, 3, IMAGE]])
    embeds = seeded(2, 3, 4, seed=36, dtype=text)
    rows = [r.to(encoder) for r in encoder_rows([1, 2], 4, seed=37)]
    # the oracle first: the call's writes cannot reach it
    input_ids_given = input_ids.clone()
    embeds_given = embeds.clone()
    got = merge(input_ids, embeds, rows)
    assert tuple(got.shape) == (2, 3, 4) and got.dtype == text, f"{got.dtype} {tuple(got.shape)}"
    want = loop_merge(input_ids_given, embeds_given, [r.to(text) for r in rows])
    assert torch.equal(got, want), "merge vs loop oracle in the text dtype"


@pytest.mark.contract
@pytest.mark.clause("P26.11")
def test_the_merged_result_is_a_new_tensor_the_caller_owns():
    input_ids = ids([[1, IMAGE], [IMAGE, 2]])
    embeds, rows = seeded(2, 2, 3, seed=38), encoder_rows([1, 1], 3, seed=39)
    before, rows_before = embeds.clone(), [r.clone() for r in rows]
    got = merge(input_ids, embeds, rows)
    got = got.clone() if got.is_inference() else got
    got.fill_(-1.0)
    assert torch.equal(embeds, before), "writing the result reached inputs_embeds"
    assert all(torch.equal(r, b) for r, b in zip(rows, rows_before, strict=True)), "rows"


# ---- extension: the reference's doors past the contract ----


@pytest.mark.extension
@pytest.mark.clause("P26.12")
@pytest.mark.parametrize(
    ("case", "argument", "errors"),
    [
        ("int64 inputs_embeds", "inputs_embeds", WRONG_KIND),
        ("meta inputs_embeds", "inputs_embeds", BAD_VALUE),
        ("float input_ids", "input_ids", WRONG_KIND),
        ("meta input_ids", "input_ids", BAD_VALUE),
        ("bool placeholder", "placeholder_token_id", WRONG_KIND),
        ("tensor placeholder", "placeholder_token_id", WRONG_KIND),
        ("generator of rows", "multimodal_embeddings", WRONG_KIND),
        ("int64 rows in request 1", "multimodal_embeddings", WRONG_KIND),
        ("meta rows in request 1", "multimodal_embeddings", BAD_VALUE),
    ],
)  # fmt: skip
def test_the_reference_rejects_inputs_the_contract_leaves_undefined(case, argument, errors):
    input_ids = ids([[1, IMAGE, 2], [IMAGE, 3, 4]])
    embeds, rows = seeded(2, 3, 4, seed=40), encoder_rows([1, 1], 4, seed=41)
    placeholder = IMAGE
    if case == "int64 inputs_embeds":
        embeds = embeds.to(torch.int64)
    elif case == "meta inputs_embeds":
        embeds = torch.empty(2, 3, 4, device="meta")
    elif case == "float input_ids":
        input_ids = input_ids.double()
    elif case == "meta input_ids":
        input_ids = torch.empty(2, 3, dtype=torch.long, device="meta")
    elif case == "bool placeholder":
        placeholder = True
    elif case == "tensor placeholder":
        placeholder = torch.tensor(IMAGE)
    elif case == "generator of rows":
        rows = (r for r in rows)
    elif case == "int64 rows in request 1":
        rows[1] = rows[1].to(torch.int64)
    else:
        rows[1] = torch.empty(1, 4, device="meta")
    keep = {n: t for n, t in (("input_ids", input_ids), ("embeds", embeds)) if not t.is_meta}
    with inputs_untouched(**keep):
        assert_rejects(
            lambda: drill.merge_multimodal_embeddings(input_ids, embeds, rows, placeholder),
            errors,
            argument,
        )


@pytest.mark.contract
@pytest.mark.clause("P26.5")
@pytest.mark.parametrize("rows", [None, "empty"], ids=["None", "empty per request"])
def test_a_text_only_request_of_one_comes_back_equal(rows):
    input_ids, embeds = ids([[5, 6, 7, 8]]), seeded(1, 4, 2, seed=42, dtype=torch.float64)
    rows = None if rows is None else [embeds.new_zeros(0, 2)]
    embeds_given = embeds.clone()  # before the call: the call's writes cannot reach it
    got = merge(input_ids, embeds, rows)
    assert torch.equal(got, embeds_given), "a text-only request changed"
