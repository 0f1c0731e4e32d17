"""The shipped pair: loading refuses anything but the expected tensors; documented numbers hold.

Extension tests (owner ``trained_pair``). The held-out bytes are shipped with the
weights, so the documented loss is checked on any interpreter.
"""

from __future__ import annotations

import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

import stdlib_pair
from stdlib_pair import demo
from stdlib_pair.corpus import HELD_OUT, SEPARATOR, decode, encode, source_files
from stdlib_pair.evaluate import held_out_loss
from stdlib_pair.weights import held_out_tokens, load_model, weights_directory

pytestmark = [pytest.mark.extension, pytest.mark.owner("trained_pair")]


@pytest.fixture(scope="module")
def held_out():
    return held_out_tokens()


@pytest.mark.parametrize("name", ["target", "draft"])
def test_weights_load_and_give_the_documented_held_out_loss(name, held_out):
    documented = stdlib_pair.card()["results"][name]["held_out_loss"]
    loss = held_out_loss(load_model(name), held_out)
    assert abs(loss - documented) <= 0.01 * documented


def test_the_draft_is_much_cheaper_and_the_target_learned_more():
    target, draft = load_model("target"), load_model("draft")
    target_size = sum(p.numel() for p in target.parameters())
    draft_size = sum(p.numel() for p in draft.parameters())
    assert draft_size * 5 < target_size
    results = stdlib_pair.card()["results"]
    assert results["target"]["held_out_loss"] < results["draft"]["held_out_loss"] < 5.55  # ln 257


def test_the_shipped_files_fit_the_budget():
    files = [weights_directory() / f"{name}.safetensors" for name in ("target", "draft")]
    assert sum(path.stat().st_size for path in files) <= 25 * 2**20


def _tampered(tmp_path, edit):
    """A copy of the target's file with one edit (everything else exactly right)."""
    tensors = load_file(str(weights_directory() / "target.safetensors"))
    edit(tensors)
    save_file(tensors, str(tmp_path / "target.safetensors"))
    return tmp_path


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda t: t.update(extra=torch.zeros(1)), "unexpected tensors \\['extra'\\]"),
        (lambda t: t.pop("final_norm.weight"), "missing tensors \\['final_norm.weight'\\]"),
        (lambda t: t.update({"lm_head.weight": t["lm_head.weight"][:-1]}), "lm_head.weight"),
        (
            lambda t: t.update(
                {"blocks.1.mlp.up_proj.weight": t["blocks.1.mlp.up_proj.weight"].double()}
            ),
            "blocks.1.mlp.up_proj.weight is F64",
        ),
    ],
    ids=["extra", "missing", "shape", "dtype"],
)
def test_loading_refuses_anything_else(tmp_path, edit, match):
    directory = _tampered(tmp_path, edit)
    with pytest.raises(ValueError, match=match):
        load_model("target", directory)


def test_loading_accepts_an_untouched_copy(tmp_path):
    shutil.copy(weights_directory() / "target.safetensors", tmp_path / "target.safetensors")
    copy = load_model("target", tmp_path)
    assert all(
        torch.equal(a, b)
        for a, b in zip(copy.parameters(), load_model("target").parameters(), strict=True)
    )


def test_unknown_model_name_is_rejected():
    with pytest.raises(ValueError, match="name"):
        load_model("teacher")  # type: ignore[arg-type]


def test_corpus_is_the_stdlib_without_the_held_out_files():
    training, held_out = source_files()
    assert {path.name for path in held_out} == set(HELD_OUT)
    assert training == sorted(training) and not {p.name for p in training} & set(HELD_OUT)
    assert decode([*encode(b"def f():\n    pass"), SEPARATOR, 65]) == b"def f():\n    pass"


def test_demo_quick_mode_streams_and_reports(capsys):
    assert demo.main(["def fibonacci(n):", "--quick", "--no-colour"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("def fibonacci(n):")
    assert "acceptance rate" in out and "speedup" in out and "identical to plain greedy: yes" in out
