"""A stranger's P17 from the README contract alone: a dataclass per entry, dropout seen by
comparing against a no_grad eval run, modes saved by name, autograd tried on a clone-free leaf."""

from dataclasses import dataclass

import torch

VARIABLE = "DRILL_P17_MODULE"


@dataclass(frozen=True)
class Seen:
    dropout: bool
    records_grad: bool
    inference_tensor: bool
    autograd_ok: bool


def _autograd_ok(y):
    leaf = torch.tensor(2.0, dtype=y.dtype, device=y.device, requires_grad=True)
    with torch.enable_grad():
        try:
            torch.autograd.grad((leaf * y).sum(), leaf)
            return True
        except RuntimeError:
            return False


def probe_inference_state(module, x):
    if not torch.is_tensor(x):
        raise ValueError(f"x must be a tensor, not {type(x).__name__}")
    if x.is_meta:
        raise ValueError("x has no values (meta)")
    if not isinstance(module, torch.nn.Module):
        raise ValueError(f"module must be an nn.Module, not {type(module).__name__}")
    modes = dict(module.named_modules())
    before = {name: m.training for name, m in modes.items()}
    grad_modes = {
        "grad": lambda: torch.set_grad_enabled(True),
        "no_grad": lambda: torch.set_grad_enabled(False),
        "inference_mode": lambda: torch.inference_mode(True),
    }
    try:
        module.train(False)
        with torch.inference_mode():
            plain = module(x)
        if not (torch.is_tensor(plain) and plain.dtype.is_floating_point):
            raise ValueError(f"module returned {type(plain).__name__}, not one float tensor")
        plain = plain.clone()
        out = {}
        for training in (True, False):
            module.train(training)
            for name, enter in grad_modes.items():
                with enter():
                    y = module(x)
                out[("train" if training else "eval", name)] = Seen(
                    dropout=bool((y.detach() != plain).any()),
                    records_grad=bool(y.requires_grad),
                    inference_tensor=bool(y.is_inference()),
                    autograd_ok=_autograd_ok(y),
                )
        return out
    finally:
        for name, m in modes.items():
            m.training = before[name]
