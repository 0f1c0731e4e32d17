"""A stranger's P17 from the kit's words alone: one table of mode switches, each output
observed (compared with an eval run, differentiated outside the modes); the module's flags
and the grad mode put back; no validation (the kit names none)."""

import torch

VARIABLE = "DRILL_P17_MODULE"

GRAD_MODES = {
    "grad": lambda: torch.enable_grad(),
    "no_grad": lambda: torch.no_grad(),
    "inference_mode": lambda: torch.inference_mode(),
}


def _differentiable(out):
    w = torch.ones((), requires_grad=True)
    try:
        with torch.enable_grad():
            (grad,) = torch.autograd.grad((out * w).sum(), w)
    except RuntimeError:
        return False
    return grad is not None


def _observe(module, x, mode, grad_mode, baseline):
    module.train(mode == "train")
    with GRAD_MODES[grad_mode]():
        out = module(x)
    return {
        "dropout": not torch.equal(out.detach(), baseline),
        "records_grad": out.requires_grad,
        "inference_tensor": out.is_inference(),
        "autograd_ok": _differentiable(out),
    }


def probe_inference_state(module, x):
    flags = {m: m.training for m in module.modules()}
    try:
        module.eval()
        with torch.no_grad():
            baseline = module(x)
        return {
            (mode, grad_mode): _observe(module, x, mode, grad_mode, baseline)
            for mode in ("train", "eval")
            for grad_mode in GRAD_MODES
        }
    finally:
        for m, flag in flags.items():
            m.training = flag
