"""A stranger tests "usable in autograd" with `out.sum().backward()`: a no_grad output is called
unusable, and the backward leaves a .grad on the module's parameters."""

import torch
from torch import nn

VARIABLE = "DRILL_P17_MODULE"
EXPECTED_OWNER = "p17"


def probe_inference_state(module, x):
    if not isinstance(module, nn.Module) or not isinstance(x, torch.Tensor):
        raise TypeError("module must be an nn.Module and x a tensor")
    flags = {name: m.training for name, m in module.named_modules()}
    module.eval()
    with torch.no_grad():
        reference = module(x)
    report = {}
    for mode in ("train", "eval"):
        module.train(mode == "train")
        for grad_mode, ctx in (
            ("grad", torch.enable_grad),
            ("no_grad", torch.no_grad),
            ("inference_mode", torch.inference_mode),
        ):
            with ctx():
                out = module(x)
            try:
                out.sum().backward()
                usable = True
            except RuntimeError:
                usable = False
            report[(mode, grad_mode)] = {
                "dropout": not torch.equal(out, reference),
                "records_grad": out.requires_grad,
                "inference_tensor": out.is_inference(),
                "autograd_ok": usable,
            }
    for name, m in module.named_modules():
        m.training = flags[name]
    return report
