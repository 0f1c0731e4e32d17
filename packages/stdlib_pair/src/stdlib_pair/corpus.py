"""The training text every machine has: the running interpreter's standard library.

Tokens are plain bytes (0..255) plus one separator (256) between files: no tokenizer
to train or ship, lossless on any text, and shared by target and draft by
construction. Bytes cost more tokens per line than BPE would, but source code is
full of bytes a small draft can guess (indentation, keywords, names repeated), which
is what speculative decoding feeds on.

Files: the ``*.py`` directly inside the stdlib directory (no packages, no tests),
sorted by name. ``HELD_OUT`` files are never trained on; a fixed slice of them is
shipped with the weights (``weights/heldout.safetensors``) so the documented held-out loss
can be checked on any interpreter.
"""

from __future__ import annotations

import operator
import sysconfig
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor

SEPARATOR = 256  # between files; also the end-of-text token when generating
VOCAB_SIZE = 257
# Present in every supported CPython (3.11+), and plain Python source.
HELD_OUT = ("bisect.py", "colorsys.py", "fractions.py", "heapq.py", "shlex.py", "textwrap.py")


def stdlib_directory() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def source_files(directory: Path | None = None) -> tuple[list[Path], list[Path]]:
    """(training files, held-out files) from ``directory`` (the stdlib), sorted by name."""
    root = stdlib_directory() if directory is None else directory
    files = sorted(path for path in root.glob("*.py") if path.is_file())
    training = [path for path in files if path.name not in HELD_OUT]
    held_out = [path for path in files if path.name in HELD_OUT]
    return training, held_out


def encode(text: str | bytes | bytearray) -> Tensor:
    """Text (``str``, encoded as UTF-8) or bytes -> long token ids ``[len(bytes)]``.

    Empty text is ``[0]`` ids. Anything else (an int, a list of ints) is a TypeError:
    ``bytes(5)`` would silently be five zero bytes.
    """
    if isinstance(text, str):
        text = text.encode("utf-8")
    if not isinstance(text, bytes | bytearray):
        raise TypeError(f"text must be str, bytes or bytearray, got {type(text).__name__}")
    if not text:
        return torch.empty(0, dtype=torch.long)  # frombuffer refuses an empty buffer
    return torch.frombuffer(bytearray(text), dtype=torch.uint8).long()


def decode(tokens: Sequence[int] | Tensor) -> bytes:
    """Token ids (ints in ``[0, 256]``, or a 1-D integer tensor) -> bytes.

    The separator (256) ends the text. A bool, a float or an id outside the
    vocabulary is refused by position (TypeError, ValueError), before decoding.
    """
    ids = _token_ids(tokens)
    if SEPARATOR in ids:
        ids = ids[: ids.index(SEPARATOR)]
    return bytes(ids)


def _token_ids(tokens: object) -> list[int]:
    if isinstance(tokens, Tensor):
        if tokens.dim() != 1 or tokens.is_floating_point() or tokens.is_complex():
            raise TypeError(
                f"tokens must be a 1-D integer tensor, got {tokens.dtype} {list(tokens.shape)}"
            )
        if tokens.dtype == torch.bool:
            raise TypeError("tokens must be integer ids, got a bool tensor")
        tokens = tokens.tolist()
    if isinstance(tokens, str | bytes | bytearray) or not isinstance(tokens, Sequence):
        raise TypeError(f"tokens must be a sequence of ints, got {type(tokens).__name__}")
    ids: list[int] = []
    for index, token in enumerate(tokens):
        # An int, or anything that is one exactly (a 0-d integer tensor): not a bool.
        if isinstance(token, bool) or (isinstance(token, Tensor) and token.dtype == torch.bool):
            raise TypeError(f"tokens[{index}] must be an int, got a bool")
        try:
            token = operator.index(token)
        except TypeError:
            raise TypeError(f"tokens[{index}] must be an int, got {type(token).__name__}") from None
        if not 0 <= token <= SEPARATOR:
            raise ValueError(
                f"tokens[{index}] = {token} is outside the vocabulary [0, {VOCAB_SIZE})"
            )
        ids.append(token)
    return ids


def token_stream(files: list[Path]) -> Tensor:
    """Every file's bytes followed by the separator, concatenated: ``[N]`` long."""
    parts: list[Tensor] = []
    for path in files:
        parts.append(encode(path.read_bytes()))
        parts.append(torch.tensor([SEPARATOR]))
    return torch.cat(parts)


__all__ = [
    "HELD_OUT",
    "SEPARATOR",
    "VOCAB_SIZE",
    "decode",
    "encode",
    "source_files",
    "stdlib_directory",
    "token_stream",
]
