"""P17 probe_inference_state(module, x): what train/eval and the grad modes each control."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from gptlab_testkit import candidate, test_device
from gptlab_testkit.objects import object_id, reported
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P17_MODULE")

pytestmark = [pytest.mark.owner("p17"), pytest.mark.contract]

MODULE_MODES = ("train", "eval")
GRAD_MODES = ("grad", "no_grad", "inference_mode")
FIELDS = ("dropout", "records_grad", "inference_tensor", "autograd_ok")


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


def probe(module: nn.Module, x: torch.Tensor) -> dict[tuple[str, str], dict[str, bool]]:
    """The candidate's report, each entry read as {field: bool} (a mapping or attributes)."""
    torch.manual_seed(0)
    report = drill.probe_inference_state(module, x)
    assert set(report) == {(m, g) for m in MODULE_MODES for g in GRAD_MODES}, sorted(report)

    def read(entry: object, field: str) -> bool:
        value = entry[field] if isinstance(entry, dict) else getattr(entry, field)
        assert isinstance(value, bool), f"{field} is {type(value).__name__}, not bool"
        return value

    return {key: {f: read(entry, f) for f in FIELDS} for key, entry in report.items()}


def column(report, field: str) -> dict[tuple[str, str], bool]:
    return {key: entry[field] for key, entry in report.items()}


def expect(rule) -> dict[tuple[str, str], bool]:
    return {(m, g): rule(m, g) for m in MODULE_MODES for g in GRAD_MODES}


def standard() -> tuple[nn.Module, torch.Tensor]:
    return Noisy(16, 0.5, seed=1), seeded(4, 16, seed=3)


@pytest.mark.clause("P17.2")
def test_report_covers_exactly_the_six_mode_combinations_with_boolean_answers():
    probe(*standard())


@pytest.mark.clause("P17.3")
def test_dropout_follows_the_module_mode_only():
    report = probe(*standard())

    assert column(report, "dropout") == expect(lambda m, g: m == "train")


@pytest.mark.clause("P17.4")
def test_grad_recording_follows_the_grad_mode_only():
    report = probe(*standard())

    assert column(report, "records_grad") == expect(lambda m, g: g == "grad")


@pytest.mark.clause("P17.5")
def test_only_inference_mode_outputs_are_inference_tensors():
    report = probe(*standard())

    assert column(report, "inference_tensor") == expect(lambda m, g: g == "inference_mode")


@pytest.mark.clause("P17.6")
def test_only_inference_mode_outputs_cannot_be_saved_for_backward():
    # A no_grad output records nothing but is an ordinary tensor: autograd may still save it.
    report = probe(*standard())

    assert column(report, "autograd_ok") == expect(lambda m, g: g != "inference_mode")


@pytest.mark.clause("P17.3")
def test_a_module_without_dropout_reports_no_dropout_in_train_mode():
    report = probe(Noisy(16, 0.0, seed=4), seeded(4, 16, seed=5))

    assert column(report, "dropout") == expect(lambda m, g: False)


@pytest.mark.clause("P17.4", "P17.6")
def test_frozen_parameters_and_a_plain_input_record_no_grad_in_any_mode():
    module = Noisy(16, 0.5, seed=6).requires_grad_(False)

    report = probe(module, seeded(4, 16, seed=7))

    assert column(report, "records_grad") == expect(lambda m, g: False)
    assert column(report, "autograd_ok") == expect(lambda m, g: g != "inference_mode")


@pytest.mark.clause("P17.4")
def test_an_input_that_requires_grad_is_recorded_through_frozen_parameters():
    module = Noisy(16, 0.5, seed=8).requires_grad_(False)
    x = seeded(4, 16, seed=9).requires_grad_()

    report = probe(module, x)

    assert column(report, "records_grad") == expect(lambda m, g: g == "grad")


@pytest.mark.clause("P17.4", "P17.10")
def test_grad_rows_record_even_when_the_probe_is_called_under_no_grad():
    with torch.no_grad():
        report = probe(*standard())
        assert not torch.is_grad_enabled(), "the caller's no_grad was switched off"

    assert column(report, "records_grad") == expect(lambda m, g: g == "grad")


@pytest.mark.clause("P17.3", "P17.4", "P17.5", "P17.6")
@settings(max_examples=15, deadline=None)
@given(
    p=st.sampled_from([0.0, 0.3, 0.9]),
    trainable=st.booleans(),
    rows=st.integers(2, 5),
    seed=st.integers(0, 2**16),
)
def test_every_answer_is_what_the_two_switches_predict(p, trainable, rows, seed):
    module = Noisy(16, p, seed=seed).requires_grad_(trainable)

    report = probe(module, seeded(rows, 16, seed=seed + 2))

    assert column(report, "dropout") == expect(lambda m, g: m == "train" and p > 0)
    assert column(report, "records_grad") == expect(lambda m, g: g == "grad" and trainable)
    assert column(report, "inference_tensor") == expect(lambda m, g: g == "inference_mode")
    assert column(report, "autograd_ok") == expect(lambda m, g: g != "inference_mode")


# ---- what the probe leaves behind ----


@pytest.mark.clause("P17.11")
@pytest.mark.parametrize(
    ("parent", "child"), [(True, False), (False, True)], ids=["train-over-eval", "eval-over-train"]
)
def test_each_submodules_own_mode_is_restored(parent, child):
    module = Noisy(16, 0.5, seed=10)
    module.train(parent)
    module.linear.train(child)

    probe(module, seeded(4, 16, seed=11))

    assert (module.training, module.linear.training) == (parent, child)


@pytest.mark.clause("P17.12")
def test_parameters_and_their_grads_are_left_as_they_were():
    module = Noisy(16, 0.5, seed=12)
    module.linear.bias.grad = seeded(16, seed=13)
    weight, bias, bias_grad = (
        module.linear.weight.detach().clone(),
        module.linear.bias.detach().clone(),
        module.linear.bias.grad.clone(),
    )

    probe(module, seeded(4, 16, seed=14))

    assert module.linear.weight.grad is None, "the probe left a .grad on the weight"
    assert torch.equal(module.linear.bias.grad, bias_grad), "the bias's .grad changed"
    assert torch.equal(module.linear.weight, weight) and torch.equal(module.linear.bias, bias)


@pytest.mark.clause("P17.10")
def test_the_input_is_not_written_and_the_global_modes_are_restored():
    module, x = standard()

    with inputs_untouched(x=x):
        probe(module, x)

    assert torch.is_grad_enabled() and not torch.is_inference_mode_enabled()


# ---- rejection, before the module is run ----


class Counting(Noisy):
    calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        Counting.calls += 1
        return super().forward(x)


@pytest.mark.clause("P17.1")
def test_the_probe_takes_the_module_and_the_input_positionally():
    module, x = standard()
    try:
        report = drill.probe_inference_state(module, x)
    except TypeError as error:  # a signature mismatch, not a rejected value
        raise AssertionError(
            f"probe_inference_state(module, x) raised TypeError: {error}"
        ) from error
    assert len(report) == 6


@pytest.mark.clause("P17.13")
def test_each_call_returns_a_report_of_its_own():
    module, x = standard()
    first = drill.probe_inference_state(module, x)
    key = ("eval", "grad")
    entry = first[key]
    first.clear()

    second = drill.probe_inference_state(module, x)

    assert len(second) == 6, "editing one report changed the next"
    shared = object_id(second) == object_id(first) or second[key] is entry
    assert not shared, f"the report objects are shared{reported(second)}"
