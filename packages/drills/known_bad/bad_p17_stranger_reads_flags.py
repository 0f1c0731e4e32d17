"""A stranger's probe reports the switches' flags (`module.training`, `torch.is_grad_enabled()`)
instead of observing the output, so a module without dropout or with frozen weights is misread."""

import torch
from torch import nn

VARIABLE = "DRILL_P17_MODULE"
EXPECTED_OWNER = "p17"

CONTEXTS = {
    "grad": torch.enable_grad,
    "no_grad": torch.no_grad,
    "inference_mode": torch.inference_mode,
}


def probe_inference_state(module, x):
    if not isinstance(module, nn.Module):
        raise TypeError("module must be an nn.Module")
    if not isinstance(x, torch.Tensor):
        raise TypeError("x must be a tensor")
    saved = [(m, m.training) for m in module.modules()]
    report = {}
    for mode in ("train", "eval"):
        module.train(mode == "train")
        for grad_mode, context in CONTEXTS.items():
            with context():
                out = module(x)
                grad_on = torch.is_grad_enabled()
            report[(mode, grad_mode)] = {
                "dropout": module.training,
                "records_grad": grad_on,
                "inference_tensor": out.is_inference(),
                "autograd_ok": not out.is_inference(),
            }
    for m, flag in saved:
        m.training = flag
    return report
