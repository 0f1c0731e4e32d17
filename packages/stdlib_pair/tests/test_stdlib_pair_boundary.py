"""Malformed weights files and token values are refused by name (extension, owner ``trained_pair``).

``load_model`` turns whatever is wrong with the file into one ValueError naming the
file; ``encode`` takes text (str, bytes, bytearray, empty included) and nothing
else (TypeError); ``decode`` takes ids in ``[0, 256]`` (256, the separator, ends the
text) as ints or a 1-D integer tensor, and refuses a bool, a float or an id outside
the vocabulary by its position. Each bad value sits after a good one.
"""

from __future__ import annotations

import json
import shutil
import struct

import pytest
import torch
from safetensors.torch import load_file, save_file

from gptlab_testkit import assert_rejects
from stdlib_pair.corpus import SEPARATOR, decode, encode
from stdlib_pair.weights import load_model, weights_directory

pytestmark = [pytest.mark.extension, pytest.mark.owner("trained_pair")]

SHIPPED = weights_directory() / "draft.safetensors"  # the small one: quick to copy


def header_of(data: bytes) -> tuple[dict, int]:
    (length,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + length]), length


def with_header(data: bytes, header: bytes) -> bytes:
    _, length = header_of(data)
    return struct.pack("<Q", len(header)) + header + data[8 + length :]


def corrupt(kind: str, data: bytes) -> bytes:
    header, length = header_of(data)
    if kind == "empty":
        return b""
    if kind == "header too small":
        return data[:5]
    if kind == "cut inside the header":
        return data[: 8 + length // 2]
    if kind == "cut inside the tensors":
        return data[: len(data) - 1000]
    if kind == "header is not JSON":
        return with_header(data, b"{not json" + b" " * (length - 9))
    if kind == "header is a JSON list":
        return with_header(data, b"[]")
    if kind == "offsets past the end":
        name = sorted(k for k in header if k != "__metadata__")[1]
        start, end = header[name]["data_offsets"]
        header[name]["data_offsets"] = [start, end + 10**9]
        return with_header(data, json.dumps(header).encode())
    raise AssertionError(kind)


CORRUPTIONS = [
    "empty",
    "header too small",
    "cut inside the header",
    "cut inside the tensors",
    "header is not JSON",
    "header is a JSON list",
    "offsets past the end",
]


@pytest.mark.parametrize("kind", CORRUPTIONS)
def test_a_corrupt_file_is_one_value_error_naming_it(tmp_path, kind):
    (tmp_path / "draft.safetensors").write_bytes(corrupt(kind, SHIPPED.read_bytes()))
    assert_rejects(lambda: load_model("draft", tmp_path), ValueError, "draft.safetensors")


def test_a_folder_or_a_missing_file_is_named(tmp_path):
    assert_rejects(lambda: load_model("draft", tmp_path), ValueError, "draft.safetensors")
    (tmp_path / "draft.safetensors").mkdir()
    assert_rejects(lambda: load_model("draft", tmp_path), ValueError, "draft.safetensors")


def test_a_non_finite_weight_in_a_later_tensor_is_named(tmp_path):
    tensors = load_file(str(SHIPPED))
    name = sorted(tensors)[-1]
    tensors[name] = tensors[name].clone()
    tensors[name].view(-1)[-1] = float("nan")
    save_file(tensors, str(tmp_path / "draft.safetensors"))
    assert_rejects(lambda: load_model("draft", tmp_path), ValueError, name)


@pytest.mark.parametrize("name", [["draft"], None, 3])
def test_a_name_of_another_kind_is_refused(name):
    assert_rejects(lambda: load_model(name), ValueError, "name")  # type: ignore[arg-type]


def test_an_untouched_copy_still_loads(tmp_path):
    shutil.copy(SHIPPED, tmp_path / "draft.safetensors")
    assert isinstance(load_model("draft", str(tmp_path)), torch.nn.Module)


@pytest.mark.parametrize(
    ("text", "want"),
    [("", []), (b"", []), (bytearray(), []), ("hé", [104, 195, 169]), (bytearray(b"ab"), [97, 98])],
)
def test_encode_takes_text_of_every_kind_empty_included(text, want):
    ids = encode(text)
    assert ids.dtype == torch.long and ids.tolist() == want


@pytest.mark.parametrize("text", [5, [1, 2], None, 1.5, (104, 105), memoryview(b"x")])
def test_encode_refuses_anything_else(text):
    assert_rejects(lambda: encode(text), TypeError, "text")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("tokens", "want"),
    [
        ([], b""),
        ([104, 105], b"hi"),
        (torch.tensor([104, 105]), b"hi"),
        (torch.tensor([104, 105], dtype=torch.int16), b"hi"),
        ([104, SEPARATOR, 105], b"h"),
        ([0, 255], b"\x00\xff"),
        ([*encode(b"hi"), SEPARATOR], b"hi"),  # 0-d integer tensors are ints
    ],
)
def test_decode_takes_ids_and_integer_tensors(tokens, want):
    assert decode(tokens) == want


@pytest.mark.parametrize(
    ("tokens", "error", "named"),
    [
        ([104, True], TypeError, "tokens[1]"),
        ([104, 105.0], TypeError, "tokens[1]"),
        ([104, torch.tensor(True)], TypeError, "tokens[1]"),
        ([104, torch.tensor(105.0)], TypeError, "tokens[1]"),
        ([104, 257], ValueError, "tokens[1]"),
        ([104, -1], ValueError, "tokens[1]"),
        ([104, 2**64], ValueError, "tokens[1]"),
        (torch.tensor([104.0, 105.0]), TypeError, "tokens"),
        (torch.tensor([True, False]), TypeError, "tokens"),
        (torch.tensor([[104, 105]]), TypeError, "tokens"),
        (torch.tensor([104, 300]), ValueError, "tokens[1]"),
        ("hi", TypeError, "tokens"),
        (b"hi", TypeError, "tokens"),
        (5, TypeError, "tokens"),
    ],
)
def test_decode_refuses_bools_floats_and_out_of_range_ids_by_position(tokens, error, named):
    assert_rejects(lambda: decode(tokens), error, named)
