"""The supplied failing test of PT06: run it beside your copy of pt06_start.py.

pytest test_pt06_start.py                      # tests pt06_start.py next to this file
DRILL_PT06_MODULE=my_pt06.py pytest test_pt06_start.py
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import torch


def _load() -> ModuleType:
    target = os.environ.get("DRILL_PT06_MODULE") or str(Path(__file__).with_name("pt06_start.py"))
    if not target.endswith(".py"):
        return importlib.import_module(target)
    spec = importlib.util.spec_from_file_location("pt06_under_test", target)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TinyDecoder: Any = _load().TinyDecoder


def build(seed: int, dropout: float = 0.0) -> Any:
    torch.manual_seed(seed)
    return TinyDecoder(vocab_size=13, d_model=8, n_heads=2, n_layers=3, dropout=dropout)


def tokens() -> torch.Tensor:
    return torch.tensor([[1, 5, 2, 7], [3, 3, 0, 12]])


def test_the_optimizer_would_see_every_layer() -> None:
    model = build(0)
    params = {id(p) for p in model.parameters()}
    for i, layer in enumerate(model.layers):
        assert all(id(p) in params for p in layer.parameters()), f"layer {i} is not registered"


def test_a_saved_and_reloaded_model_gives_the_same_logits() -> None:
    saved, fresh = build(0).eval(), build(1).eval()
    fresh.load_state_dict(saved.state_dict(), strict=True)
    assert torch.equal(fresh(tokens()), saved(tokens()))


def test_eval_turns_off_dropout_in_every_layer() -> None:
    model = build(0, dropout=0.5).eval()
    assert torch.equal(model(tokens()), model(tokens()))


def test_to_double_reaches_every_layer() -> None:
    model = build(0).to(torch.float64)
    assert model(tokens()).dtype == torch.float64


def test_an_appended_layer_is_registered() -> None:
    model = build(0)
    before = sum(p.numel() for p in model.parameters())
    model.add_layer()
    assert sum(p.numel() for p in model.parameters()) > before
