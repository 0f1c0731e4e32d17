"""The supplied failing test of PT31: run it beside your copy of pt31_start.py.

pytest test_pt31_start.py                      # tests pt31_start.py next to this file
DRILL_PT31_MODULE=my_pt31.py pytest test_pt31_start.py

Until you split the tensor core out as decode_core, the compile tests compile the start's
decode_step itself (with a throwaway history).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import Any

import torch


def _load(target: str, name: str) -> ModuleType:
    if not target.endswith(".py"):
        return importlib.import_module(target)
    spec = importlib.util.spec_from_file_location(name, target)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HERE = Path(__file__).with_name("pt31_start.py")
_module = _load(os.environ.get("DRILL_PT31_MODULE") or str(HERE), "pt31_under_test")


def _supplied_start() -> Path:
    """The start file as supplied (not your edited copy): the package's, else the one here."""
    try:
        supplied = resources.files("gptlab_drills").joinpath("artifacts", "pt31_start.py")
        return Path(str(supplied)) if supplied.is_file() else HERE
    except ModuleNotFoundError:
        return HERE


def tensor_core() -> Any:
    core = getattr(_module, "decode_core", None)
    if core is not None:
        return core

    def whole_step(logits: Any, lengths: Any, finished: Any, scores: Any, eos_id: int) -> Any:
        return _module.decode_step(logits, lengths, finished, scores, eos_id, [])[:3]

    return whole_step


def batch(b: int, t: int, finished: list[bool], seed: int) -> tuple[Any, ...]:
    logits = torch.randn(b, t, 9, generator=torch.Generator().manual_seed(seed))
    lengths = torch.arange(b) % t + 1  # rows end at different positions
    return logits, lengths, torch.tensor(finished), torch.zeros(b), 0


def compiled_equals_eager(args: tuple[Any, ...], **options: Any) -> None:
    torch.compiler.reset()
    core = tensor_core()
    want = core(*args)
    compiled: Any = torch.compile(core, backend="eager", fullgraph=True, **options)
    got = compiled(*args)
    for name, g, w in zip(("tokens", "finished", "scores"), got, want, strict=True):
        torch.testing.assert_close(g, w, msg=f"compiled {name} differ from eager")


def test_the_tensor_core_compiles_whole_when_no_row_is_finished() -> None:
    compiled_equals_eager(batch(3, 4, [False, False, False], seed=0))


def test_the_tensor_core_compiles_whole_with_a_finished_row() -> None:
    args = batch(3, 4, [False, True, False], seed=1)
    compiled_equals_eager(args)
    assert tensor_core()(*args)[0][1].item() == 0, "a finished row emits eos_id"


def test_one_dynamic_graph_serves_other_batch_and_chunk_sizes() -> None:
    for b, t, seed in ((2, 5, 2), (4, 3, 3), (5, 6, 4)):
        compiled_equals_eager(batch(b, t, [row == 1 for row in range(b)], seed), dynamic=True)


def test_each_graph_break_of_the_start_is_named() -> None:
    start = _load(str(_supplied_start()), "pt31_supplied_start")
    torch.compiler.reset()
    found = set()
    for finished in ([False, True, False], [False, False, False]):
        explained = torch._dynamo.explain(start.decode_step)(*batch(3, 4, finished, 5), [])
        found |= {str(r.user_stack[-1].line).strip() for r in explained.break_reasons}
    stated = {str(line).strip() for line, _kind in _module.graph_breaks()}
    assert stated == found, f"graph_breaks() names {sorted(stated)}; dynamo found {sorted(found)}"
