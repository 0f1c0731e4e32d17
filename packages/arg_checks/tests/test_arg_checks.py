"""Each shared check: what it accepts (returned as is), what it refuses, with which class,
and that the message names the argument (extension, owner ``argument_checks``)."""

from __future__ import annotations

import re

import pytest
import torch

import arg_checks
from arg_checks import (
    ArgumentTypeError,
    check_device,
    check_instance,
    check_int,
    check_str,
    check_tensor,
    check_weights,
    device_memory,
    numbered_count,
)

pytestmark = [pytest.mark.extension, pytest.mark.owner("argument_checks")]

CPU = torch.device("cpu")


def test_a_wrong_kind_is_a_type_error_and_a_value_error() -> None:
    assert issubclass(ArgumentTypeError, TypeError)
    assert issubclass(ArgumentTypeError, ValueError)


def test_every_exported_name_exists() -> None:
    assert all(hasattr(arg_checks, name) for name in arg_checks.__all__)


# ---- check_int


@pytest.mark.parametrize(("value", "minimum", "maximum"), [(0, 0, None), (5, 1, 5), (-3, -3, 0)])
def test_check_int_returns_an_int_in_range(value: int, minimum: int, maximum: int | None) -> None:
    assert check_int("size", value, minimum=minimum, maximum=maximum) is value


@pytest.mark.parametrize("value", [True, 1.0, "1", None, torch.tensor(1)], ids=repr)
def test_check_int_refuses_another_kind_by_name(value: object) -> None:
    with pytest.raises(ArgumentTypeError, match="block_size"):
        check_int("block_size", value, minimum=0)


@pytest.mark.parametrize(("value", "bound"), [(0, ">= 1"), (6, "<= 5")])
def test_check_int_refuses_a_value_out_of_range_by_name(value: int, bound: str) -> None:
    with pytest.raises(ValueError, match=f"block_size must be {bound}, got {value}") as caught:
        check_int("block_size", value, minimum=1, maximum=5)
    assert not isinstance(caught.value, TypeError)


# ---- check_str and check_instance


def test_check_str_accepts_a_str_and_an_allowed_empty_one() -> None:
    assert check_str("model_id", "m", allow_empty=False) == "m"
    assert check_str("model_id", "", allow_empty=True) == ""


@pytest.mark.parametrize("value", [None, 3, b"m", ["m"]], ids=repr)
def test_check_str_refuses_another_kind_by_name(value: object) -> None:
    with pytest.raises(ArgumentTypeError, match="cache_id must be a str"):
        check_str("cache_id", value, allow_empty=True)


def test_check_str_refuses_an_empty_id_where_one_is_required() -> None:
    with pytest.raises(ValueError, match="cache_id must be a non-empty str") as caught:
        check_str("cache_id", "", allow_empty=False)
    assert not isinstance(caught.value, TypeError)


class Namespace:
    pass


def test_check_instance_returns_the_instance_and_refuses_anything_else() -> None:
    namespace = Namespace()
    assert check_instance("namespace", namespace, Namespace) is namespace
    with pytest.raises(ArgumentTypeError, match="namespace must be a Namespace, got str"):
        check_instance("namespace", "ns", Namespace)


# ---- check_tensor and check_device


def test_check_tensor_returns_a_matching_tensor() -> None:
    tensor = torch.zeros(2, 3, dtype=torch.long)
    assert check_tensor("slots", tensor, shape=(2, None), dtype=torch.long, device=CPU) is tensor


def test_check_tensor_refuses_a_non_tensor_as_the_wrong_kind() -> None:
    with pytest.raises(ArgumentTypeError, match="slots must be a tensor, got list"):
        check_tensor("slots", [[0, 1]], shape=(1, 2), dtype=torch.long, device=CPU)


@pytest.mark.parametrize(
    ("tensor", "said"),
    [
        (torch.zeros(2, dtype=torch.long), r"slots must have shape \[2, \*\], got \[2\]"),
        (torch.zeros(3, 4, dtype=torch.long), r"slots must have shape \[2, \*\], got \[3, 4\]"),
        (torch.zeros(2, 4), "slots must have dtype torch.int64, got torch.float32"),
        (torch.zeros(2, 4, dtype=torch.long, device="meta"), "slots must be on device cpu"),
    ],
    ids=["rank", "size", "dtype", "device"],
)
def test_check_tensor_refuses_a_mismatch_as_a_bad_value(tensor: torch.Tensor, said: str) -> None:
    with pytest.raises(ValueError, match=said) as caught:
        check_tensor("slots", tensor, shape=(2, None), dtype=torch.long, device=CPU)
    assert not isinstance(caught.value, TypeError)


@pytest.mark.parametrize("device", ["cpu", CPU], ids=repr)
def test_check_device_accepts_the_cpu(device: object) -> None:
    assert check_device("device", device) == CPU


def test_check_device_refuses_another_kind() -> None:
    with pytest.raises(ArgumentTypeError, match="device must be a torch.device or str"):
        check_device("device", 0)


@pytest.mark.parametrize(
    ("device", "said"),
    [
        ("no-such-device", "is not a device"),
        ("meta", "holds no data"),
        ("cuda:999", "is not available on this machine"),
    ],
)
def test_check_device_refuses_a_device_that_cannot_hold_data(device: str, said: str) -> None:
    with pytest.raises(ValueError, match=f"device {re.escape(repr(device))} {said}") as caught:
        check_device("device", device)
    assert not isinstance(caught.value, TypeError)


def test_device_memory_knows_the_cpu_and_not_meta() -> None:
    memory = device_memory(CPU)
    assert memory is None or memory > 2**20  # a machine has more than a MiB (or cannot say)
    assert device_memory(torch.device("meta")) is None


# ---- check_weights and numbered_count


def test_check_weights_returns_a_mapping_of_floating_weights() -> None:
    weights = {"w": torch.zeros(2), "b": torch.zeros(1, dtype=torch.float16)}
    assert check_weights("state_dict", weights) is weights


@pytest.mark.parametrize(
    ("state_dict", "said"),
    [
        ([("w", torch.zeros(1))], "state_dict must be a mapping"),
        ({1: torch.zeros(1)}, "state_dict keys must be str, got int 1"),
        ({"w": [0.0]}, r"state_dict\['w'\] must be a Tensor, got list"),
    ],
    ids=["not-a-mapping", "int-key", "non-tensor"],
)
def test_check_weights_refuses_another_kind_naming_the_key(state_dict: object, said: str) -> None:
    with pytest.raises(ArgumentTypeError, match=said):
        check_weights("state_dict", state_dict)


def test_check_weights_refuses_an_integer_weight_naming_its_key() -> None:
    with pytest.raises(ValueError, match=r"state_dict\['w'\] must be a floating-point weight"):
        check_weights("state_dict", {"b": torch.zeros(1), "w": torch.zeros(1, dtype=torch.long)})


LAYER = re.compile(r"blocks\.(\d+)\.")


def test_numbered_count_counts_layers_numbered_from_zero() -> None:
    names = ["embed", "blocks.1.b", "blocks.0.w", "blocks.1.w", "blocks.2.w", "head"]
    assert numbered_count(names, LAYER, what="the state dict", unit="block") == 3


@pytest.mark.parametrize(
    ("names", "said"),
    [
        (["blocks.0.w", "blocks.2.w"], r"'blocks\.2\.w': block 2 of only 2 blocks"),
        (["blocks.0.w", "blocks.999999999.w"], r"'blocks\.999999999\.w': block 999999999 of only"),
        (["blocks.1.w"], r"'blocks\.1\.w': block 1 of only 1 blocks \(indices must run 0\.\.0\)"),
        (["embed", "head"], "the state dict has no blocks"),
    ],
    ids=["gap", "absurd", "not-from-zero", "none"],
)
def test_numbered_count_refuses_indices_that_do_not_run_from_zero(
    names: list[str], said: str
) -> None:
    with pytest.raises(ValueError, match=said):
        numbered_count(names, LAYER, what="the state dict", unit="block")


def test_numbered_count_shows_the_caller_s_name_for_the_key() -> None:
    with pytest.raises(ValueError, match=r"'model\.layers\.3\.w': layer 3 of only 1 layers"):
        numbered_count(
            ["blocks.3.w"],
            LAYER,
            what="the state dict",
            unit="layer",
            shown=lambda name: name.replace("blocks.", "model.layers."),
        )
