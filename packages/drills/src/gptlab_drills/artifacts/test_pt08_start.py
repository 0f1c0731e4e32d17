"""The supplied failing test of PT08: run it beside your copy of pt08_start.py.

pytest test_pt08_start.py                      # tests pt08_start.py next to this file
DRILL_PT08_MODULE=my_pt08.py pytest test_pt08_start.py
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
    target = os.environ.get("DRILL_PT08_MODULE") or str(Path(__file__).with_name("pt08_start.py"))
    if not target.endswith(".py"):
        return importlib.import_module(target)
    spec = importlib.util.spec_from_file_location("pt08_under_test", target)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TiedLM: Any = _load().TiedLM


def build(seed: int) -> Any:
    torch.manual_seed(seed)
    return TiedLM(vocab_size=11, d_model=6, hidden=12)


def test_the_head_and_the_embedding_are_one_parameter() -> None:
    model = build(0)
    assert model.head.weight is model.embedding.weight


def test_a_write_through_the_embedding_shows_in_the_head() -> None:
    model = build(0)
    with torch.no_grad():
        model.embedding.weight[2] = 5.0
    assert torch.equal(model.head.weight[2], torch.full((6,), 5.0))


def test_the_tie_survives_a_strict_load() -> None:
    source, model = build(0), build(1)
    model.load_state_dict(source.state_dict(), strict=True)
    assert model.head.weight is model.embedding.weight
    assert torch.equal(model.head.weight, source.embedding.weight)


def test_an_untied_checkpoint_is_refused_with_a_reason() -> None:
    state = {key: value.clone() for key, value in build(0).state_dict().items()}
    state["head.weight"] += 1.0
    with pytest.raises((ValueError, RuntimeError), match="head.weight"):
        build(1).load_state_dict(state, strict=True)
