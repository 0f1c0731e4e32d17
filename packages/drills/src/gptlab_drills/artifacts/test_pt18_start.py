"""The supplied failing test of PT18: run it beside your copy of pt18_start.py.

pytest test_pt18_start.py                      # tests pt18_start.py next to this file
DRILL_PT18_MODULE=my_pt18.py pytest test_pt18_start.py
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch


def _load() -> ModuleType:
    target = os.environ.get("DRILL_PT18_MODULE") or str(Path(__file__).with_name("pt18_start.py"))
    if not target.endswith(".py"):
        return importlib.import_module(target)
    spec = importlib.util.spec_from_file_location("pt18_under_test", target)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_module = _load()
RotaryLM: Any = _module.RotaryLM
position_ids_from_mask: Any = _module.position_ids_from_mask


def build() -> Any:
    torch.manual_seed(0)
    return RotaryLM(vocab_size=11, d_model=8, n_heads=2, n_layers=2).eval()


# Two sequences of 2 and 5 tokens, left-padded to 5 (pad id 0, mask 0).
SEQUENCES = [[4, 7], [1, 9, 3, 3, 5]]
IDS = torch.tensor([[0, 0, 0, 4, 7], [1, 9, 3, 3, 5]])
MASK = torch.tensor([[0, 0, 0, 1, 1], [1, 1, 1, 1, 1]])


def test_real_tokens_are_numbered_from_zero() -> None:
    positions = position_ids_from_mask(MASK)
    assert positions[0, 3:].tolist() == [0, 1], f"row 0's real tokens at {positions[0].tolist()}"
    assert positions[1].tolist() == [0, 1, 2, 3, 4]


def test_left_padded_logits_equal_unpadded_runs() -> None:
    model = build()
    with torch.no_grad():
        batch = model(IDS, MASK)
        for row, sequence in enumerate(SEQUENCES):
            alone = model(torch.tensor([sequence]), torch.ones(1, len(sequence), dtype=torch.long))
            torch.testing.assert_close(batch[row, -len(sequence) :], alone[0])


def test_pad_tokens_never_change_a_real_tokens_logits() -> None:
    model = build()
    with torch.no_grad():
        before = model(IDS, MASK)
        after = model(torch.tensor([[8, 2, 6, 4, 7], [1, 9, 3, 3, 5]]), MASK)
    torch.testing.assert_close(after[0, 3:], before[0, 3:])


def test_a_row_of_padding_only_is_rejected() -> None:
    with pytest.raises(ValueError, match="attention_mask"):
        build()(IDS, torch.tensor([[0, 0, 0, 0, 0], [1, 1, 1, 1, 1]]))
