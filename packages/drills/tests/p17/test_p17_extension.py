"""P17 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from gptlab_testkit import assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P17_MODULE")

pytestmark = [pytest.mark.owner("p17"), pytest.mark.extension]


class Noisy(nn.Module):
    """A linear layer, then dropout read from self.training (functional, like a stranger's)."""

    def __init__(self, width: int, p: float, seed: int) -> None:
        super().__init__()
        self.p = p
        self.linear = nn.Linear(width, width)
        with torch.no_grad():
            self.linear.weight.copy_(seeded(width, width, seed=seed))
            self.linear.bias.copy_(seeded(width, seed=seed + 1))
        self.to(test_device())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.dropout(self.linear(x), self.p, self.training)


class Counting(Noisy):
    calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        Counting.calls += 1
        return super().forward(x)


class Paired(Noisy):
    """Returns (output, output): not one tensor."""

    def forward(self, x: torch.Tensor):  # type: ignore[override]
        out = super().forward(x)
        return out, out


class Rounded(Noisy):
    """Returns an integer tensor: nothing to differentiate."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x).round().long()


@pytest.mark.clause("P17.7")
def test_a_module_that_is_not_an_nn_module_is_rejected():
    x = seeded(4, 16, seed=15)
    plain_function = Noisy(16, 0.5, seed=16).forward

    with inputs_untouched(x=x):
        assert_rejects(
            lambda: drill.probe_inference_state(plain_function, x),
            (TypeError, ValueError),
            "module",
        )


@pytest.mark.clause("P17.8")
def test_an_input_that_is_not_a_tensor_is_rejected_before_the_module_runs():
    module = Counting(16, 0.5, seed=17)
    Counting.calls = 0

    assert_rejects(
        lambda: drill.probe_inference_state(module, [[0.0] * 16] * 4), (TypeError, ValueError), "x"
    )
    assert Counting.calls == 0, "the module ran before the input was rejected"
    assert module.training, "the module's mode changed before the input was rejected"


@pytest.mark.clause("P17.8")
def test_a_meta_input_is_rejected_before_the_module_runs():
    module = Counting(16, 0.5, seed=18)
    Counting.calls = 0

    assert_rejects(
        lambda: drill.probe_inference_state(module, torch.empty(4, 16, device="meta")),
        (TypeError, ValueError),
        "x",
    )
    assert Counting.calls == 0, "the module ran before the meta input was rejected"


@pytest.mark.clause("P17.9")
@pytest.mark.parametrize("kind", [Paired, Rounded], ids=["tuple", "integer"])
def test_a_module_whose_output_is_not_one_floating_tensor_is_rejected_and_left_as_it_was(kind):
    module = kind(16, 0.5, seed=19)
    module.train(False)
    module.linear.train(True)
    module.linear.bias.grad = seeded(16, seed=20)
    x = seeded(4, 16, seed=21)
    before = module.linear.weight.detach().clone(), module.linear.bias.grad.clone()

    with inputs_untouched(x=x):
        assert_rejects(
            lambda: drill.probe_inference_state(module, x), (TypeError, ValueError), "module"
        )

    assert (module.training, module.linear.training) == (False, True), "flags not restored"
    assert module.linear.weight.grad is None, "a .grad was created"
    assert torch.equal(module.linear.weight, before[0]) and torch.equal(
        module.linear.bias.grad, before[1]
    )
    assert torch.is_grad_enabled() and not torch.is_inference_mode_enabled()
