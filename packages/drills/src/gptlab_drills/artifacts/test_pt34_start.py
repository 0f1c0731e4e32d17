"""The supplied failing test of PT34: run it beside your copy of pt34_start.py.

pytest test_pt34_start.py                      # tests pt34_start.py next to this file
DRILL_PT34_MODULE=my_pt34.py pytest test_pt34_start.py
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
    target = os.environ.get("DRILL_PT34_MODULE") or str(Path(__file__).with_name("pt34_start.py"))
    if not target.endswith(".py"):
        # An operator's registration is process-wide and the last one wins: reload, so the
        # operators registered are this module's even after another file registered its own.
        return importlib.reload(importlib.import_module(target))
    spec = importlib.util.spec_from_file_location("pt34_under_test", target)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_module = _load()
cache_write_: Any = _module.cache_write_
cache_written: Any = _module.cache_written

INDEX = torch.tensor([3, 1])


def cache() -> torch.Tensor:
    return torch.zeros(5, 2, 4)


def value() -> torch.Tensor:
    return torch.arange(16, dtype=torch.float32).reshape(2, 2, 4) + 1


def test_the_write_only_form_returns_none_and_fills_the_slots() -> None:
    destination = cache()
    assert cache_write_(destination, INDEX, value()) is None
    torch.testing.assert_close(destination[INDEX], value())


def test_the_fresh_output_form_leaves_its_input_alone() -> None:
    source = cache()
    updated = cache_written(source, INDEX, value())
    torch.testing.assert_close(source, cache())
    torch.testing.assert_close(updated[INDEX], value())


def test_the_fresh_output_fake_has_the_caches_size_and_dtype() -> None:
    meta = cache_written(cache().to("meta"), INDEX.to("meta"), value().to("meta"))
    assert meta.shape == cache().shape and meta.dtype == torch.float32


def test_opcheck_passes_on_both_operators() -> None:
    for operator in (cache_write_, cache_written):
        report = torch.library.opcheck(operator, (cache(), INDEX, value()), raise_exception=False)
        failed = [name for name, verdict in report.items() if verdict != "SUCCESS"]
        assert not failed, f"{operator}: opcheck failed {failed}"


def test_a_compiled_step_keeps_its_write() -> None:
    def step(destination: torch.Tensor) -> torch.Tensor:
        cache_write_(destination, INDEX, value())
        return destination * 1  # read after the write

    destination = cache()
    seen = torch.compile(step, backend="aot_eager", fullgraph=True)(destination)
    torch.testing.assert_close(seen[INDEX], value())
    torch.testing.assert_close(destination[INDEX], value())
