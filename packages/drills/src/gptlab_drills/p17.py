"""P17 inference-state probe: which switch controls what, observed rather than assumed.

Two independent switches decide how a forward pass behaves. The module mode
(`module.train()` / `module.eval()`) decides whether dropout is applied; the grad mode
(grad enabled, `torch.no_grad()`, `torch.inference_mode()`) decides whether autograd
records a graph, and inference mode also makes the output an inference tensor, which
autograd may never save for backward. The probe runs one module on one input under all
six combinations and reports what it saw.

Shapes: any; `x` is whatever `module` accepts, and the module returns one tensor.
Report: {(module_mode, grad_mode): {"dropout", "records_grad", "inference_tensor",
"autograd_ok"}} with module_mode in MODULE_MODES and grad_mode in GRAD_MODES.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import torch
from torch import Tensor, nn

from ._describe import described

MODULE_MODES = ("train", "eval")
GRAD_MODES = ("grad", "no_grad", "inference_mode")

Report = dict[tuple[str, str], dict[str, bool]]

_GRAD_CONTEXTS: dict[str, Callable[[], contextlib.AbstractContextManager[object]]] = {
    "grad": torch.enable_grad,  # explicit: the caller may have called us under no_grad
    "no_grad": torch.no_grad,
    "inference_mode": torch.inference_mode,
}


def probe_inference_state(module: nn.Module, x: Tensor) -> Report:
    """Run `module(x)` under every (module mode, grad mode) pair and report, per pair:

    dropout: the output differs from the eval-mode output (randomness was applied);
    records_grad: the output is part of an autograd graph (`requires_grad`);
    inference_tensor: the output is an inference tensor;
    autograd_ok: outside any no-grad mode, `(output * w).sum()` for a fresh leaf `w`
    backpropagates to `w` (an inference tensor cannot be saved for backward).
    The module's per-submodule train/eval flags, its parameters and their `.grad` are
    left as they were; `x` is never written.
    """
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a Tensor, got {type(x).__name__}")
    if x.device.type == "meta":  # no values: nothing could be observed
        raise ValueError("x is a meta tensor; the probe compares values")
    report: Report = {}
    with _modes_restored(module):
        with torch.no_grad():
            baseline = module.eval()(x)
        if not isinstance(baseline, Tensor) or not baseline.is_floating_point():
            raise TypeError(f"module must return one floating tensor, got {described(baseline)}")
        baseline = baseline.detach().clone()  # deterministic reference output
        for module_mode in MODULE_MODES:
            module.train(module_mode == "train")
            for grad_mode in GRAD_MODES:
                with _GRAD_CONTEXTS[grad_mode]():
                    out = module(x)
                report[(module_mode, grad_mode)] = {
                    "dropout": not torch.equal(out.detach(), baseline),
                    "records_grad": out.requires_grad,
                    "inference_tensor": out.is_inference(),
                    "autograd_ok": _usable_in_autograd(out),
                }
    return report


def _usable_in_autograd(out: Tensor) -> bool:
    """Can `out` enter a graph as a saved tensor? Uses autograd.grad so no `.grad` is left."""
    with torch.enable_grad():
        w = torch.ones((), dtype=out.dtype, device=out.device, requires_grad=True)
        try:
            (grad,) = torch.autograd.grad((out * w).sum(), [w])
        except RuntimeError:  # "Inference tensors cannot be saved for backward"
            return False
    return grad is not None


@contextlib.contextmanager
def _modes_restored(module: nn.Module) -> Iterator[None]:
    """Restore each submodule's own flag: `module.train(was)` would flatten mixed modes."""
    flags = [(sub, sub.training) for sub in module.modules()]
    try:
        yield
    finally:
        for sub, training in flags:
            sub.training = training


__all__ = ["GRAD_MODES", "MODULE_MODES", "probe_inference_state"]
