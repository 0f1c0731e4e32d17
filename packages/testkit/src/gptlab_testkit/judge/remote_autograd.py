"""Gradients across the wire, for a candidate's call that took tensors requiring grad.

In one process a test may run the candidate's submodules on tensors of its own graph
(`model.norm(x + model.mlp(x))` with `x` from a reference embedding) and call
`backward()`: the gradient goes through the candidate's code and on into the test's
tensors. In judge mode the call runs in the worker, so the judge ties each output that
requires grad to the call's inputs that do with `ThroughWorker`, an autograd function
whose backward is the worker's: it carries the output gradients into the worker's graph
(so the candidate's parameters get their `.grad` there, as in one process) and returns
the gradients its copies of the inputs received. Inputs requiring grad go by value, so
the worker's copies are leaves that collect them.
"""

from __future__ import annotations

from typing import Any

import torch
from gptlab_worker import wire

from gptlab_testkit.judge import worker_facts


class _Link:
    """One call's outputs and inputs, by the worker's serials of its own tensors."""

    def __init__(
        self,
        worker: Any,
        outputs: list[torch.Tensor],
        inputs: list[torch.Tensor],
        input_serials: list[int],
    ) -> None:
        self.worker, self.outputs, self.inputs = worker, outputs, inputs
        self.output_serials = [worker_facts.serial_of(t, worker) for t in outputs]
        self.input_serials = input_serials

    def vjp(self, grads: tuple[torch.Tensor | None, ...]) -> list[torch.Tensor | None]:
        """The worker's backward from these output gradients: the inputs' gradients."""
        blobs: list[bytes] = []
        pairs = [
            [serial, wire.encode(grad.detach(), blobs)]
            for serial, grad in zip(self.output_serials, grads, strict=True)
            if grad is not None and serial is not None
        ]
        message = {"op": "vjp", "outputs": pairs, "inputs": self.input_serials}
        reply = self.worker.request(message, blobs)
        found = wire.decode(reply["value"], reply.pop("_blobs"))
        if not isinstance(found, list) or len(found) != len(self.inputs):
            raise wire.WireError("malformed input gradients")
        return [_checked(grad, tensor) for grad, tensor in zip(found, self.inputs, strict=True)]


class ThroughWorker(torch.autograd.Function):
    """Outputs of a worker call, made differentiable with respect to its inputs."""

    @staticmethod
    def forward(ctx: Any, link: _Link, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        ctx.link = link
        ctx.set_materialize_grads(False)
        return tuple(output.detach() for output in link.outputs)

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor | None) -> tuple[Any, ...]:
        return (None, *ctx.link.vjp(grads))


def inputs_requiring_grad(args: Any, kwargs: Any) -> list[torch.Tensor]:
    """The tensors of a call's arguments that the test's graph goes through, if any."""
    if not torch.is_grad_enabled() or torch.is_inference_mode_enabled():
        return []
    return [t for t in worker_facts.tensors_in([args, kwargs]) if t.requires_grad]


def connect(worker: Any, value: Any, inputs: list[torch.Tensor]) -> Any:
    """`value` (a call's result, decoded) with its tensors that require grad replaced by
    ThroughWorker's outputs (same values and worker facts, differentiable in `inputs`)."""
    outputs = [t for t in worker_facts.tensors_in(value) if t.requires_grad]
    serials = [worker_facts.serial_of(t, worker, arguments=True) for t in inputs]
    if not outputs or None in serials:
        return value
    link = _Link(worker, outputs, inputs, [s for s in serials if s is not None])
    linked = ThroughWorker.apply(link, *inputs)  # type: ignore[no-untyped-call]
    replaced = dict(zip(map(id, outputs), linked, strict=True))
    for old, new in zip(outputs, linked, strict=True):
        worker_facts.rebind(old, new)
    return _replace(value, replaced)


def _replace(value: Any, replaced: dict[int, torch.Tensor], depth: int = 0) -> Any:
    if isinstance(value, torch.Tensor):
        return replaced.get(id(value), value)
    if depth >= 8:
        return value
    if isinstance(value, list):
        return [_replace(item, replaced, depth + 1) for item in value]
    if isinstance(value, tuple):
        items = [_replace(item, replaced, depth + 1) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, dict):
        return {key: _replace(item, replaced, depth + 1) for key, item in value.items()}
    return value


def _checked(grad: Any, tensor: torch.Tensor) -> torch.Tensor | None:
    if grad is None:
        return None
    if not isinstance(grad, torch.Tensor) or grad.shape != tensor.shape:
        raise wire.WireError("malformed input gradient")
    return grad.to(device=tensor.device, dtype=tensor.dtype)
