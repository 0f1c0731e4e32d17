"""PT18 RotaryLM and position_ids_from_mask, repaired from artifacts/pt18_start.py.

A left-padded batch must give every real token what its sequence gives alone, unpadded:
position ids count real tokens from 0 (a physical column is not a logical position), pads
hold a harmless position and are never attended. The oracle is the same model run on each
sequence alone (no padding, mask of ones), at fp32 tolerance.
"""

from __future__ import annotations

import importlib.util

import pytest
import torch

from gptlab_drills.catalogue import DRILLS
from gptlab_testkit import BAD_VALUE, assert_close, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import assert_binds, inputs_untouched

drill = candidate("DRILL_PT18_MODULE")

pytestmark = [pytest.mark.owner("pt18"), pytest.mark.contract]

VOCAB, WIDTH, PAD = 13, 8, 0


def build(seed: int = 0, n_layers: int = 2, max_positions: int = 64, width: int = WIDTH):
    torch.manual_seed(seed)
    model = drill.RotaryLM(vocab_size=VOCAB, d_model=width, n_heads=2, n_layers=n_layers,
                           max_positions=max_positions)  # fmt: skip
    return model.to(test_device()).eval()


def left_padded(sequences: list[list[int]], width: int | None = None, pad: int = PAD):
    """(ids [B, T], mask [B, T] long): each sequence right-aligned, pads on the left."""
    T = width or max(map(len, sequences))
    ids = [[pad] * (T - len(s)) + s for s in sequences]
    mask = [[0] * (T - len(s)) + [1] * len(s) for s in sequences]
    return tensor(ids), tensor(mask)


def tensor(rows: list[list[int]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long, device=test_device())


def alone(model, sequence: list[int], method: str = "forward") -> torch.Tensor:
    ids, mask = tensor([sequence]), tensor([[1] * len(sequence)])
    with torch.no_grad():
        return getattr(model, method)(ids, mask)[0]


SEQUENCES = [[4, 7], [1, 9, 3, 3, 5], [11], [2, 6, 12, 8]]


@pytest.mark.clause("PT18.1")
def test_the_model_and_the_position_builder_take_the_artifacts_arguments():
    model = build()
    ids, mask = left_padded(SEQUENCES)
    assert_binds(drill.position_ids_from_mask, mask)
    assert_binds(drill.position_ids_from_mask, attention_mask=mask)
    with torch.no_grad():
        by_name = model(input_ids=ids, attention_mask=mask)
        by_position = model(ids, mask)
    assert_close(by_name, by_position)


@pytest.mark.clause("PT18.2")
def test_logits_hidden_states_and_positions_have_the_stated_shapes_and_dtypes():
    model = build()
    ids, mask = left_padded(SEQUENCES)
    with torch.no_grad():
        logits, hidden = model(ids, mask), model.hidden(ids, mask)
    positions = drill.position_ids_from_mask(mask)
    assert tuple(logits.shape) == (4, 5, VOCAB) and logits.dtype == torch.float32, logits.shape
    assert tuple(hidden.shape) == (4, 5, WIDTH), f"hidden {tuple(hidden.shape)}"
    assert tuple(positions.shape) == (4, 5) and positions.dtype == torch.int64, positions.dtype


@pytest.mark.clause("PT18.3")
@pytest.mark.parametrize("as_bool", [False, True], ids=["0/1 mask", "bool mask"])
def test_each_rows_real_tokens_are_numbered_from_zero(as_bool):
    _, mask = left_padded(SEQUENCES, width=6)
    positions = drill.position_ids_from_mask(mask.bool() if as_bool else mask)
    for row, sequence in enumerate(SEQUENCES):
        real = positions[row, 6 - len(sequence) :].tolist()
        assert real == list(range(len(sequence))), f"row {row}'s real tokens at {real}"


@pytest.mark.clause("PT18.4")
@pytest.mark.parametrize("width", [7, 12])
def test_a_pads_position_is_a_harmless_index(width):
    _, mask = left_padded(SEQUENCES, width=width)
    positions = drill.position_ids_from_mask(mask)
    for row, sequence in enumerate(SEQUENCES):
        pads = positions[row, : width - len(sequence)].tolist()
        assert all(0 <= p < len(sequence) for p in pads), (
            f"row {row} ({len(sequence)} real tokens): pad positions {pads} are not in "
            f"[0, {len(sequence) - 1}]"
        )


@pytest.mark.clause("PT18.5")
def test_pad_token_ids_never_change_a_real_tokens_logits():
    model = build()
    ids, mask = left_padded(SEQUENCES)
    other, _ = left_padded(SEQUENCES, pad=10)
    with torch.no_grad():
        before, after = model(ids, mask), model(other, mask)
    for row, sequence in enumerate(SEQUENCES):
        assert_close(after[row, 5 - len(sequence) :], before[row, 5 - len(sequence) :])


@pytest.mark.clause("PT18.5")
def test_more_left_padding_never_changes_a_real_tokens_logits():
    model = build()
    with torch.no_grad():
        short, wide = model(*left_padded(SEQUENCES)), model(*left_padded(SEQUENCES, width=9))
    for row, sequence in enumerate(SEQUENCES):
        n = len(sequence)
        assert_close(wide[row, 9 - n :], short[row, 5 - n :])


@pytest.mark.clause("PT18.6")
@pytest.mark.parametrize("n_layers", [1, 3])
def test_real_tokens_logits_equal_each_sequence_run_alone(n_layers):
    model = build(1, n_layers)
    ids, mask = left_padded(SEQUENCES)
    with torch.no_grad():
        batch = model(ids, mask)
    for row, sequence in enumerate(SEQUENCES):
        assert_close(batch[row, 5 - len(sequence) :], alone(model, sequence))


@pytest.mark.clause("PT18.6")
def test_a_one_token_row_behind_long_padding_equals_its_run_alone():
    model = build(2)
    ids, mask = left_padded([[7], [3, 1, 4, 1, 5, 9, 2, 6]])
    with torch.no_grad():
        batch = model(ids, mask)
    assert_close(batch[0, -1:], alone(model, [7]))


@pytest.mark.clause("PT18.7")
def test_real_tokens_hidden_states_equal_each_sequence_run_alone():
    model = build(3)
    ids, mask = left_padded(SEQUENCES)
    with torch.no_grad():
        batch = model.hidden(ids, mask)
    for row, sequence in enumerate(SEQUENCES):
        assert_close(batch[row, 5 - len(sequence) :], alone(model, sequence, "hidden"))


@pytest.mark.clause("PT18.8")
def test_a_batch_wider_than_the_rotary_table_works_when_every_sequence_fits():
    model = build(4, max_positions=6)
    sequences = [[1, 2, 3, 4, 5, 6], [8, 9], [12]]
    ids, mask = left_padded(sequences, width=9)  # columns 0..8, positions only 0..5
    with torch.no_grad():
        batch = model(ids, mask)
    for row, sequence in enumerate(sequences):
        assert_close(batch[row, 9 - len(sequence) :], alone(model, sequence))


@pytest.mark.clause("PT18.10")
@pytest.mark.parametrize(("n_layers", "width"), [(2, 8), (1, 12)], ids=["D 4", "D 6"])
def test_the_repair_keeps_the_artifacts_math_on_an_unpadded_batch(n_layers, width):
    path = DRILLS["PT18"].starting_artifact()
    spec = importlib.util.spec_from_file_location("pt18_artifact_for_math", str(path))
    assert spec is not None and spec.loader is not None
    artifact = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(artifact)
    torch.manual_seed(9)
    start = artifact.RotaryLM(
        vocab_size=VOCAB, d_model=width, n_heads=2, n_layers=n_layers, max_positions=64
    ).eval()
    model = build(5, n_layers, width=width).cpu()
    try:
        model.load_state_dict(start.state_dict(), strict=True)
    except RuntimeError as error:
        raise AssertionError(f"the artifact's weights do not fit the repair: {error}") from error
    ids = (torch.arange(2 * 48).reshape(2, 48) * 7) % VOCAB  # long enough for far angles
    mask = torch.ones_like(ids)
    with torch.no_grad():
        # the oracle first: the call's writes cannot reach it
        want = start(ids, mask)
        assert_close(model(ids, mask), want, "repaired vs the artifact's logits")


@pytest.mark.clause("PT18.11")
def test_the_ids_and_the_mask_are_only_read():
    model = build()
    ids, mask = left_padded(SEQUENCES)
    with inputs_untouched(input_ids=ids, attention_mask=mask), torch.no_grad():
        model(ids, mask)
        drill.position_ids_from_mask(mask)


# ---- rejection: a row of padding only has no position 0 ----


@pytest.mark.clause("PT18.9")
@pytest.mark.parametrize("row", [0, 2])
def test_a_row_of_padding_only_is_rejected_by_the_position_builder(row):
    _, mask = left_padded(SEQUENCES)
    mask[row] = 0
    with inputs_untouched(attention_mask=mask):
        assert_rejects(lambda: drill.position_ids_from_mask(mask), BAD_VALUE, "attention_mask")


@pytest.mark.clause("PT18.9")
def test_a_row_of_padding_only_is_rejected_by_the_model():
    model = build()
    ids, mask = left_padded(SEQUENCES)
    mask[3] = 0
    with inputs_untouched(input_ids=ids, attention_mask=mask), torch.no_grad():
        assert_rejects(lambda: model(ids, mask), BAD_VALUE, "attention_mask")
