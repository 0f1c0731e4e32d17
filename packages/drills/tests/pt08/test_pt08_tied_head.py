"""PT08 TiedLM, repaired from artifacts/pt08_start.py: one matrix for embedding and head."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_drills.catalogue import DRILLS
from gptlab_testkit import BAD_VALUE, assert_close, assert_rejects, candidate, test_device
from gptlab_testkit.boundary import tensor_state
from gptlab_testkit.objects import assert_same_memory, assert_same_object

drill = candidate("DRILL_PT08_MODULE")

pytestmark = [pytest.mark.owner("pt08")]  # each test says contract or extension

VOCAB, WIDTH = 11, 6
TIED = ("embedding.weight", "head.weight")


def build(seed: int):
    torch.manual_seed(seed)
    return drill.TiedLM(vocab_size=VOCAB, d_model=WIDTH, hidden=12).to(test_device())


def tokens() -> torch.Tensor:
    return torch.tensor([[1, 4, 9, 0], [10, 2, 2, 7]], device=test_device())


def untied_copy(state: dict) -> dict:
    """The checkpoint the broken artifact would save: every entry its own tensor."""
    return {key: value.detach().clone() for key, value in state.items()}


def model_state(model) -> dict:
    return {name: tensor_state(t) for name, t in model.state_dict(keep_vars=True).items()}


@pytest.mark.contract
@pytest.mark.clause("PT08.1", "PT08.5")
def test_the_head_weight_is_the_embedding_parameter():
    model = build(0)

    assert_same_object(model.head.weight, model.embedding.weight, "head and embedding weights")


@pytest.mark.contract
@pytest.mark.clause("PT08.5")
def test_the_tie_shares_one_storage_in_the_model_and_its_state_dict():
    model = build(0)
    state = model.state_dict()

    assert_same_memory(model.head.weight, model.embedding.weight, "head and embedding weights")
    assert set(TIED) <= set(state), f"the state dict lacks one of {TIED}"
    assert_same_memory(state[TIED[0]], state[TIED[1]], "the tied state-dict entries")


@pytest.mark.contract
@pytest.mark.clause("PT08.4")
@pytest.mark.parametrize("through", ["embedding", "head"])
def test_a_write_through_either_shows_in_the_other_and_in_the_logits(through):
    model = build(0).eval()
    writer = getattr(model, through).weight
    with torch.no_grad():
        writer[3] = torch.linspace(-1.0, 1.0, WIDTH)

    for name in ("embedding", "head"):
        assert_close(getattr(model, name).weight[3], writer[3], f"{name}.weight[3] after the write")
    x = model.embedding(tokens())
    want = F.linear(model.norm(x + model.mlp(x)), model.embedding.weight)
    assert_close(model(tokens()), want, "logits vs the embedding matrix used as the head")


@pytest.mark.contract
@pytest.mark.clause("PT08.6")
def test_the_shared_matrix_is_counted_once():
    model = build(0)

    expected = sum(p.numel() for part in (model.embedding, model.mlp, model.norm)
                   for p in part.parameters())  # fmt: skip

    assert sum(p.numel() for p in model.parameters()) == expected


@pytest.mark.contract
@pytest.mark.clause("PT08.6")
@pytest.mark.parametrize("loss", ["logsumexp", "cross entropy"])
def test_the_shared_gradient_sums_both_uses(loss):
    def objective(logits):
        if loss == "logsumexp":
            return logits.logsumexp(-1).mean()
        return F.cross_entropy(logits.flatten(0, 1), tokens().flatten().roll(1))

    model = build(0)
    objective(model(tokens())).backward()

    E = model.embedding.weight.detach()
    as_input, as_head = E.clone().requires_grad_(), E.clone().requires_grad_()
    x = F.embedding(tokens(), as_input)
    objective(F.linear(model.norm(x + model.mlp(x)), as_head)).backward()

    want = as_input.grad + as_head.grad
    assert_close(model.embedding.weight.grad, want, "shared grad vs the sum of both uses")


@pytest.mark.contract
@pytest.mark.clause("PT08.7")
def test_the_tie_survives_a_strict_load_and_the_logits_follow_the_checkpoint():
    source, model = build(0).eval(), build(1).eval()

    model.load_state_dict(source.state_dict(), strict=True)

    assert_same_object(model.head.weight, model.embedding.weight, "head and embedding weights")
    assert torch.equal(model(tokens()), source(tokens()))


@pytest.mark.contract
@pytest.mark.clause("PT08.7")
def test_a_checkpoint_with_separate_but_equal_entries_loads_and_stays_tied():
    source, model = build(0).eval(), build(1).eval()

    model.load_state_dict(untied_copy(source.state_dict()), strict=True)

    assert_same_object(model.head.weight, model.embedding.weight, "head and embedding weights")
    assert torch.equal(model(tokens()), source(tokens()))


@pytest.mark.contract
@pytest.mark.clause("PT08.3", "PT08.7")
def test_the_tie_survives_a_dtype_move():
    model = build(0).to(torch.float64)

    assert_same_object(model.head.weight, model.embedding.weight, "head and embedding weights")
    assert model.head.weight.dtype == torch.float64


@pytest.mark.contract
@pytest.mark.clause("PT08.8")
def test_an_untied_checkpoint_is_refused_before_any_write_naming_the_keys():
    model = build(1)
    state = untied_copy(build(0).state_dict())
    state["head.weight"][4] += 1.0  # valid in every respect but one: the two matrices differ
    before = model_state(model)

    assert_rejects(lambda: model.load_state_dict(state, strict=True), (ValueError, RuntimeError),
                   TIED)  # fmt: skip

    assert model_state(model) == before, "the model changed before the checkpoint was refused"


@pytest.mark.contract
@pytest.mark.clause("PT08.8")
@settings(max_examples=10, deadline=None)
@given(
    row=st.integers(0, VOCAB - 1),
    col=st.integers(0, WIDTH - 1),
    delta=st.sampled_from([1.0, -0.5, 1e-2]),
    key=st.sampled_from(TIED),
)
def test_any_difference_between_the_two_entries_is_refused(row, col, delta, key):
    model = build(1)
    state = untied_copy(build(0).state_dict())
    state[key][row, col] += delta
    before = model_state(model)

    assert_rejects(lambda: model.load_state_dict(state, strict=True), (ValueError, RuntimeError),
                   TIED)  # fmt: skip

    assert model_state(model) == before, "the model changed before the checkpoint was refused"


@pytest.mark.contract
@pytest.mark.clause("PT08.1", "PT08.2", "PT08.3")
def test_logits_are_b_by_t_by_vocab_from_a_bias_free_head():
    model = build(0).eval()
    assert tuple(model.embedding.weight.shape) == (VOCAB, WIDTH)
    assert model.head.bias is None, "the head must be bias-free"
    for name in ("mlp", "norm"):
        assert hasattr(model, name), f"TiedLM has no attribute {name}"
    logits = model(tokens())
    assert tuple(logits.shape) == (2, 4, VOCAB) and logits.dtype == torch.float32, logits.shape
    double = model.to(torch.float64)(tokens())
    assert double.dtype == torch.float64, f"logits after .to(float64): {double.dtype}"


@pytest.mark.contract
@pytest.mark.clause("PT08.4")
def test_the_logits_use_the_embedding_matrix_as_the_head():
    model = build(3).eval()
    x = model.embedding(tokens())
    want = model.norm(x + model.mlp(x)) @ model.embedding.weight.T
    assert_close(model(tokens()), want, "logits vs norm(x + mlp(x)) @ E^T")


@pytest.mark.contract
@pytest.mark.clause("PT08.9")
def test_a_loaded_checkpoints_tensors_are_copied_in_never_kept():
    source, model = build(0).eval(), build(1).eval()
    state = untied_copy(source.state_dict())
    model.load_state_dict(state, strict=True)
    want = model(tokens()).clone()
    with torch.no_grad():
        for tensor in state.values():
            tensor.add_(1.0)
    assert torch.equal(model(tokens()), want), "writing the checkpoint changed the model"
    assert_same_object(model.head.weight, model.embedding.weight, "head and embedding weights")


def artifact_module():
    """The supplied start file, imported on its own (its math is what the repair keeps)."""
    import importlib.util

    path = DRILLS["PT08"].starting_artifact()
    spec = importlib.util.spec_from_file_location("pt08_artifact_for_math", str(path))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.contract
@pytest.mark.clause("PT08.4")
@pytest.mark.parametrize("seed", [4, 9])
def test_loaded_with_the_artifacts_weights_the_repair_gives_the_artifacts_logits(seed):
    torch.manual_seed(seed)
    start = artifact_module().TiedLM(vocab_size=VOCAB, d_model=WIDTH, hidden=12).eval()
    model = build(1).eval().cpu()
    try:
        model.load_state_dict(untied_copy(start.state_dict()), strict=True)
    except (RuntimeError, ValueError) as error:
        raise AssertionError(f"the artifact's checkpoint does not load: {error}") from error
    ids = tokens().cpu()
    assert_close(model(ids), start(ids), "repaired logits vs the artifact's", atol=1e-6, rtol=1e-6)


# ---- extension: the reference's doors past the contract ----


@pytest.mark.extension
@pytest.mark.clause("PT08.10")
@pytest.mark.parametrize("case", ["missing", "unexpected", "misshaped", "not a tensor"])
def test_the_reference_refuses_a_checkpoint_that_does_not_fit_before_any_write(case):
    model = build(1)
    state = untied_copy(build(0).state_dict())
    if case == "missing":
        key = "norm.bias"
        del state[key]
    elif case == "unexpected":
        key = "mlp.9.weight"
        state[key] = torch.zeros(2)
    elif case == "misshaped":
        key = "mlp.0.weight"
        state[key] = state[key][:, :-1].clone()
    else:
        key = "norm.weight"
        state[key] = state[key].tolist()
    before = model_state(model)

    assert_rejects(lambda: model.load_state_dict(state, strict=True), BAD_VALUE, "state_dict")

    assert model_state(model) == before, f"the model changed before the {case} entry was refused"
