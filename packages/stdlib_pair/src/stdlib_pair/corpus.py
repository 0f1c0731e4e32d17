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

import sysconfig
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


def encode(text: bytes) -> Tensor:
    """Bytes -> long token ids ``[len(text)]``."""
    return torch.frombuffer(bytearray(text), dtype=torch.uint8).long()


def decode(tokens: list[int]) -> bytes:
    """Token ids -> bytes; the separator ends the text."""
    if SEPARATOR in tokens:
        tokens = tokens[: tokens.index(SEPARATOR)]
    return bytes(tokens)


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
