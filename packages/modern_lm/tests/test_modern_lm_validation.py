"""This project's validation beyond the contract: bad inputs raise ValueError (or the
package's ArgumentTypeError, also a ValueError) naming the argument, before any work."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit.boundary import BAD_VALUE, assert_rejected_unchanged

pytestmark = [pytest.mark.extension, pytest.mark.owner("modern_decoder")]


@pytest.fixture(scope="module")
def model(m02):
    return m02.model(m02.config())


def good_ids(m02):
    return m02.ids(2, 5, m02.config().vocab_size, seed=1)


@pytest.mark.parametrize(
    ("case", "name"),
    [
        (lambda ids, pos: (ids.float(), None), "input_ids"),
        (lambda ids, pos: (ids[0], None), "input_ids"),
        (lambda ids, pos: (ids[:, :0], None), "input_ids"),
        (lambda ids, pos: (ids + 100, None), "input_ids"),
        (lambda ids, pos: (ids, pos[:, :3]), "positions"),
        (lambda ids, pos: (ids, pos.float()), "positions"),
        (lambda ids, pos: (ids, pos + 1000), "positions"),
        (lambda ids, pos: (ids, pos - 1), "positions"),
        (lambda ids, pos: (ids, [[0, 1, 2, 3, 4]] * 2), "positions"),
    ],
)
def test_malformed_inputs_are_rejected_naming_the_argument(m02, model, case, name):
    ids = good_ids(m02)
    bad_ids, bad_positions = case(ids, m02.positions([0, 0], 5))
    with pytest.raises(ValueError, match=name):
        model(bad_ids, positions=bad_positions)


@pytest.mark.clause("M02.39")
@pytest.mark.parametrize("name", ["input_ids", "positions", "labels"])
def test_meta_ids_positions_or_labels_are_rejected_naming_them_and_change_nothing(m02, name):
    """A meta tensor has a shape but no values: refused before any work, not at `.item()`."""
    model = m02.model(m02.config()).train()  # training mode: dropout would draw, if reached
    ids = good_ids(m02)
    arguments = {"input_ids": ids, "positions": m02.positions([0, 0], 5), "labels": ids}
    arguments[name] = arguments[name].to("meta")
    rng = torch.get_rng_state()

    assert_rejected_unchanged(model, lambda: model(**arguments), BAD_VALUE, name)
    assert torch.equal(torch.get_rng_state(), rng), "a rejected forward drew random numbers"


def test_more_tokens_than_the_context_are_rejected(m02):
    config = m02.config(max_position_embeddings=4)
    with pytest.raises(ValueError, match="max_position_embeddings"):
        m02.model(config)(m02.ids(1, 5, config.vocab_size, seed=2))


@pytest.mark.parametrize("labels", [torch.zeros(2, 4, dtype=torch.long), torch.zeros(2, 5)])
def test_malformed_labels_are_rejected(m02, model, labels):
    with pytest.raises(ValueError, match="labels"):
        model(good_ids(m02), labels=labels.to(good_ids(m02).device))


@pytest.mark.parametrize("config", [None, {"vocab_size": 4}, "config"])
def test_a_config_of_the_wrong_kind_is_a_type_error(m02, config):
    with pytest.raises(TypeError, match="config"):
        type(m02.model(m02.config()))(config)


@pytest.mark.parametrize("field", ["vocab_size", "head_dim"])
def test_a_bool_size_is_a_type_error_that_is_also_a_value_error(m02, field):
    with pytest.raises(TypeError, match=field) as caught:
        m02.config(**{field: True})
    assert isinstance(caught.value, ValueError)
