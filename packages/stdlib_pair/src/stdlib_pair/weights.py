"""The pair's shapes, and loading that accepts exactly those weights and nothing else.

``load_model("target")`` builds the Llama-shaped ``ModernCacheAwareLM`` of
``CONFIGS["target"]`` and fills it from ``weights/target.safetensors`` after
checking that the file holds exactly the model's tensor names, each with the
model's shape and dtype (float32): a missing, extra, reshaped or re-typed tensor
is a ValueError naming it, before any weight is loaded.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file
from torch import Tensor

from cache_aware_lm.modern import ModernCacheAwareLM, ModernConfig

from .corpus import VOCAB_SIZE

ModelName = Literal["target", "draft"]
CONFIGS: dict[str, ModernConfig] = {
    # About the benchmark's Llama shape (d_model 256, 4 layers, grouped K/V heads).
    "target": ModernConfig(
        vocab_size=VOCAB_SIZE, context_length=256, d_model=256, n_layers=4,
        n_heads=4, n_kv_heads=2, d_ff=512,
    ),
    # One layer, half the width: about a tenth of the target's weights.
    "draft": ModernConfig(
        vocab_size=VOCAB_SIZE, context_length=256, d_model=128, n_layers=1,
        n_heads=2, n_kv_heads=1, d_ff=384,
    ),
}  # fmt: skip


def weights_directory() -> Path:
    return Path(str(resources.files(__package__).joinpath("weights")))


def card() -> dict[str, Any]:
    """The training run's record (recipe, time, held-out losses, acceptance): card.json."""
    data: dict[str, Any] = json.loads((weights_directory() / "card.json").read_text("utf-8"))
    return data


def save_model(model: ModernCacheAwareLM, path: Path) -> None:
    tensors = {name: tensor.detach().contiguous() for name, tensor in model.state_dict().items()}
    save_file(tensors, str(path))


def save_held_out(tokens: Tensor, path: Path) -> None:
    save_file({"tokens": tokens.to(torch.int16).contiguous()}, str(path))


def held_out_tokens(directory: Path | None = None) -> Tensor:
    """The held-out tokens the card's losses were scored on (long ``[N]``)."""
    path = (weights_directory() if directory is None else directory) / "heldout.safetensors"
    with safe_open(str(path), framework="pt") as handle:
        tokens: Tensor = handle.get_tensor("tokens")
    return tokens.long()


def load_model(name: ModelName, directory: Path | str | None = None) -> ModernCacheAwareLM:
    """The trained model ``name`` in eval mode, from ``directory`` (the shipped weights).

    Whatever is wrong with the file (missing, a folder, truncated, a corrupt header,
    a missing or extra tensor, a wrong shape or dtype, a non-finite weight) is one
    ValueError naming the file and the problem, raised before any weight is loaded.
    """
    if not isinstance(name, str) or name not in CONFIGS:
        raise ValueError(f"name must be one of {sorted(CONFIGS)}, got {name!r}")
    if directory is not None and not isinstance(directory, Path | str):
        raise TypeError(f"directory must be a path or None, got {type(directory).__name__}")
    path = (weights_directory() if directory is None else Path(directory)) / f"{name}.safetensors"
    model = ModernCacheAwareLM(CONFIGS[name])
    model.load_state_dict(read_checked(path, model.state_dict()), strict=True)
    return model.eval()


def read_checked(path: Path, expected: dict[str, Tensor]) -> dict[str, Tensor]:
    """The file's tensors, if their names, shapes and dtypes are exactly ``expected``'s.

    A ValueError naming ``path`` for anything else, the safetensors reader's own
    errors (a truncated file, a header that is not JSON) included.
    """
    if not path.is_file():
        what = "a folder" if path.is_dir() else "missing"
        raise ValueError(f"{path}: the weights file is {what}, not a safetensors file")
    try:
        tensors = _read(path, expected)
    except (SafetensorError, OSError) as error:
        raise ValueError(f"{path}: not a readable safetensors file ({error})") from error
    for tensor_name, tensor in tensors.items():
        if not bool(torch.isfinite(tensor).all()):
            raise ValueError(f"{path.name}: {tensor_name} holds non-finite values")
    return tensors


def _read(path: Path, expected: dict[str, Tensor]) -> dict[str, Tensor]:
    with safe_open(str(path), framework="pt") as handle:
        names = set(handle.keys())
        missing, extra = sorted(set(expected) - names), sorted(names - set(expected))
        if missing or extra:
            raise ValueError(f"{path.name}: missing tensors {missing}, unexpected tensors {extra}")
        for tensor_name, reference in expected.items():
            sliced = handle.get_slice(tensor_name)
            shape, dtype = tuple(sliced.get_shape()), sliced.get_dtype()
            if shape != tuple(reference.shape) or dtype != "F32":
                raise ValueError(
                    f"{path.name}: {tensor_name} is {dtype} {shape}, expected F32 "
                    f"{tuple(reference.shape)}"
                )
        tensors = {tensor_name: handle.get_tensor(tensor_name) for tensor_name in expected}
    assert all(t.dtype == torch.float32 for t in tensors.values())
    return tensors


__all__ = [
    "CONFIGS",
    "card",
    "held_out_tokens",
    "load_model",
    "read_checked",
    "save_held_out",
    "save_model",
    "weights_directory",
]
