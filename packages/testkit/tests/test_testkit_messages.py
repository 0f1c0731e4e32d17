"""What a contract test accepts of a message: the name with underscores or spaces, or the value."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit.messages import assert_rejects_naming, names_what_is_wrong, what_is_wrong

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]


def raise_(error: BaseException) -> None:
    raise error


@pytest.mark.parametrize(
    "message",
    [
        "request_id 'zzz' is not open",
        "unknown request id 'zzz'",
        "no such request: 'zzz'",
        'no such request: "zzz"',
    ],
)
def test_the_name_either_way_or_the_quoted_value_is_accepted(message):
    assert names_what_is_wrong(message, "request_id", values=["zzz"])


@pytest.mark.parametrize(
    "message",
    [
        "cache_request_id is wrong",  # inside a longer name
        "request_ids must be distinct",  # another name
        "no such request: zzz2",  # not the value, unquoted inside another word
        "bad input",
    ],
)
def test_other_names_and_values_are_not(message):
    assert not names_what_is_wrong(message, "request_id", values=["zzz"])


def test_values_that_are_not_strings_match_as_printed_whole():
    assert names_what_is_wrong(
        "layer 0 key dtype torch.float64 != torch.float32", values=[torch.float64]
    )
    assert names_what_is_wrong("got shape (1, 3, 1, 3)", values=[(1, 3, 1, 3)])
    assert names_what_is_wrong("got -2", values=[-2])
    assert not names_what_is_wrong("got 12", values=[2])
    pattern = what_is_wrong("max_new_tokens", values=[0])
    with pytest.raises(ValueError, match=pattern):
        raise ValueError("max new tokens must be >= 1")


def test_assert_rejects_naming_tells_silence_and_foreign_errors_apart():
    error = assert_rejects_naming(lambda: raise_(ValueError("seed -1")), ValueError, "seed")
    assert isinstance(error, ValueError)
    with pytest.raises(AssertionError, match="names neither"):
        assert_rejects_naming(lambda: raise_(ValueError("bad")), ValueError, "seed", values=[-1])
    with pytest.raises(AssertionError, match="got KeyError"):
        assert_rejects_naming(lambda: raise_(KeyError("seed")), ValueError, "seed")
    with pytest.raises(AssertionError, match="accepted"):
        assert_rejects_naming(lambda: None, ValueError, "seed")
    with pytest.raises(ValueError, match="needs an argument"):
        what_is_wrong()
