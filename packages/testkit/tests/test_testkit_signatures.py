"""The judge reads a graded callable's signature from the submitted source (`signatures`)."""

from __future__ import annotations

import inspect

import pytest

from gptlab_testkit.loading.signatures import from_source

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]


def _read(source: str, path: str, **others: str) -> str | None:
    files = {"attempt.py": source, **{f"{name}.py": text for name, text in others.items()}}
    signature = from_source(files, "attempt", path)
    return None if signature is None else str(signature)


def test_a_function_is_read_with_its_kinds_and_plain_defaults() -> None:
    source = "def f(a, /, b, c=3, *rest, d, e='x', **more):\n    return a\n"
    assert _read(source, "f") == "(a, /, b, c=3, *rest, d, e='x', **more)"


def test_a_default_that_is_not_plain_data_is_a_stand_in() -> None:
    read = from_source(
        {"attempt.py": "import torch\ndef f(x, g=torch.float32): ...\n"}, "attempt", "f"
    )
    assert read is not None
    assert read.parameters["g"].default == "<the candidate's default>"


def test_a_class_is_read_from_its_init_without_self() -> None:
    source = "class Norm:\n    def __init__(self, dim, eps=1e-6):\n        self.dim = dim\n"
    assert _read(source, "Norm") == "(dim, eps=1e-06)"


def test_a_method_through_its_class_keeps_self_and_a_classmethod_drops_cls() -> None:
    source = (
        "class Cache:\n"
        "    def reset(self, start=None): ...\n"
        "    @classmethod\n"
        "    def empty(cls, batch): ...\n"
    )
    assert _read(source, "Cache.reset") == "(self, start=None)"
    assert _read(source, "Cache.empty") == "(batch)"


def test_aliases_lambdas_and_the_submissions_own_imports_are_followed() -> None:
    assert _read("def g(a, b): ...\nf = g\n", "f") == "(a, b)"
    assert _read("f = lambda q, k=2: q\n", "f") == "(q, k=2)"
    helpers = "def append(k_cache, v_cache, k_new, v_new, positions): ...\n"
    source = "from helpers import append as f\n"
    assert _read(source, "f", helpers=helpers) == "(k_cache, v_cache, k_new, v_new, positions)"
    assert _read("from .helpers import append\n", "append", helpers=helpers) is not None


@pytest.mark.parametrize(
    "source",
    [
        "import functools\ndef g(a, b): ...\nf = functools.partial(g, 1)\n",  # a call's result
        "if True:\n    def f(a): ...\nelse:\n    def f(a, b): ...\n",  # bound in a branch
        "def f(a): ...\ndef f(a, b): ...\n",  # bound twice
        "from torch import f\n",  # an import from outside the submission
        "f, g = (lambda a: a), (lambda b: b)\n",  # unpacked
        "from dataclasses import dataclass\n@dataclass\nclass f:\n    a: int\n",  # no __init__
        "def f(a:\n",  # not Python
        "x = 1\n",  # not there
    ],
)
def test_what_the_source_does_not_settle_is_left_to_the_worker(source: str) -> None:
    assert _read(source, "f") is None


def test_a_forged_signature_attribute_does_not_change_what_is_read() -> None:
    source = (
        "import inspect\n"
        "def f(a, b):\n    return a\n"
        "f.__signature__ = inspect.Signature(\n"
        "    [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in 'abc']\n"
        ")\n"
    )
    read = from_source({"attempt.py": source}, "attempt", "f")
    assert read is not None and list(read.parameters) == ["a", "b"]
    with pytest.raises(TypeError):
        read.bind(1, 2, 3)
    assert isinstance(read, inspect.Signature)
