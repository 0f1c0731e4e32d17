"""A stranger's P11 from the README alone: checks the rows first, filters by zeroing and
renormalising probabilities, draws with Tensor.multinomial, returns [B, 1], inference_mode."""

import math

import torch

VARIABLE = "DRILL_P11_MODULE"


def _reject_rows(logits):
    nan_or_inf = torch.isnan(logits) | torch.isposinf(logits)
    no_finite = ~torch.isfinite(logits).any(dim=1)
    bad = (nan_or_inf.any(dim=1) | no_finite).nonzero()
    if len(bad):
        raise ValueError(f"logits: row {int(bad[0])} cannot be sampled")


def _reject_kinds(temperature, top_k, top_p, generator):
    number = (int, float)
    if isinstance(temperature, bool) or not isinstance(temperature, number):
        raise TypeError(f"temperature must be a number, not {type(temperature).__name__}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int)):
        raise TypeError(f"top_k must be an int, not {type(top_k).__name__}")
    if top_p is not None and (isinstance(top_p, bool) or not isinstance(top_p, number)):
        raise TypeError(f"top_p must be a number, not {type(top_p).__name__}")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, not {type(generator).__name__}")


@torch.inference_mode()
def sample_next_token(logits, *, temperature, top_k=None, top_p=None, generator):
    if not torch.is_tensor(logits) or logits.ndim != 2 or not logits.is_floating_point():
        raise ValueError("logits must be a float [B, V] tensor")
    if 0 in logits.shape:
        raise ValueError(f"logits {tuple(logits.shape)} has no row or no token")
    _reject_kinds(temperature, top_k, top_p, generator)
    if generator.device != logits.device:
        raise ValueError(
            f"generator on {generator.device} cannot draw for logits on {logits.device}"
        )
    _reject_rows(logits)
    vocab = logits.shape[1]
    if top_p is not None and not (0 < top_p <= 1):
        raise ValueError(f"top_p={top_p} is outside (0, 1]")
    if top_k is not None and (top_k < 0 or top_k > vocab):
        raise ValueError(f"top_k={top_k} is outside 0..{vocab}")
    if not math.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature={temperature} must be finite and non-negative")
    if temperature == 0:
        return logits.argmax(dim=1, keepdim=True)
    wide = logits.float()
    probs = torch.softmax((wide - wide.max(dim=1, keepdim=True).values) / temperature, dim=1)
    if top_k:
        kth = probs.topk(top_k, dim=1).values[:, -1:]
        probs = torch.where(probs >= kth, probs, 0.0)
        probs = probs / probs.sum(dim=1, keepdim=True)
    if top_p is not None and top_p < 1:
        ordered = probs.sort(dim=1, descending=True).values
        short = (ordered.cumsum(dim=1) - ordered) < top_p
        count = short.sum(dim=1, keepdim=True).clamp(min=1)
        floor = ordered.gather(1, count - 1)
        probs = torch.where(probs >= floor, probs, 0.0)
        probs = probs / probs.sum(dim=1, keepdim=True)
    return probs.multinomial(1, generator=generator)
