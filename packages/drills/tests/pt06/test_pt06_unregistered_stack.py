"""PT06 TinyDecoder, repaired from artifacts/pt06_start.py: every layer registered once."""

from __future__ import annotations

import inspect

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_drills.catalogue import DRILLS
from gptlab_testkit import assert_close, candidate, test_device
from gptlab_testkit.objects import assert_same_memory, object_id

drill = candidate("DRILL_PT06_MODULE")

pytestmark = [pytest.mark.owner("pt06")]  # each test says contract or extension

VOCAB = 13


def build(seed: int, n_layers: int = 3, dropout: float = 0.0):
    torch.manual_seed(seed)
    model = drill.TinyDecoder(vocab_size=VOCAB, d_model=8, n_heads=2, n_layers=n_layers,
                              dropout=dropout)  # fmt: skip
    return model.to(test_device())


def tokens() -> torch.Tensor:
    return torch.tensor([[1, 5, 2, 7, 9], [3, 3, 0, 12, 4]], device=test_device())


def by_hand(model, input_ids: torch.Tensor) -> torch.Tensor:
    """The start file's forward, spelled out through the registered container."""
    x = model.embedding(input_ids)
    for layer in model.layers:
        x = layer(x)
    return model.head(model.final_norm(x))


def own_parameters(module) -> list[torch.nn.Parameter]:
    return list(module.parameters())


@pytest.mark.contract
@pytest.mark.clause("PT06.4")
def test_every_layer_parameter_appears_once_in_named_parameters():
    model = build(0)

    listed = [object_id(p) for _, p in model.named_parameters(remove_duplicate=False)]

    assert len(listed) == len(set(listed)), "a parameter is listed more than once"
    for i, layer in enumerate(model.layers):
        missing = [n for n, p in layer.named_parameters() if object_id(p) not in set(listed)]
        assert not missing, f"layer {i}'s {missing} are not in named_parameters()"


@pytest.mark.contract
@pytest.mark.clause("PT06.4")
def test_the_parameter_count_is_the_sum_of_the_parts():
    model = build(0)
    parts = [model.embedding, model.final_norm, model.head, *model.layers]

    expected = sum(p.numel() for part in parts for p in own_parameters(part))

    assert sum(p.numel() for p in model.parameters()) == expected


@pytest.mark.contract
@pytest.mark.clause("PT06.5", "PT06.10")
def test_layer_checkpoint_paths_follow_the_container_index():
    model = build(0)
    state = model.state_dict()

    for i, layer in enumerate(model.layers):
        for name, tensor in layer.state_dict().items():
            key = f"layers.{i}.{name}"
            assert key in state, f"{key} is not in the state dict"
            assert_same_memory(state[key], tensor, f"{key} is another tensor")


@pytest.mark.contract
@pytest.mark.clause("PT06.5")
def test_a_strict_state_dict_round_trip_keeps_the_outputs():
    saved, fresh = build(0, dropout=0.1).eval(), build(1, dropout=0.1).eval()

    fresh.load_state_dict(saved.state_dict(), strict=True)

    assert torch.equal(fresh(tokens()), saved(tokens()))


@pytest.mark.contract
@pytest.mark.clause("PT06.3", "PT06.6")
def test_to_float64_reaches_every_layer():
    model = build(0).eval()
    want = model(tokens()).double()

    model.to(torch.float64)

    dtypes = {name: p.dtype for name, p in model.named_parameters() if p.dtype != torch.float64}
    assert not dtypes, f"still not float64: {sorted(dtypes)}"
    for i, layer in enumerate(model.layers):
        assert all(p.dtype == torch.float64 for p in layer.parameters()), f"layer {i}"
    got = model(tokens())
    assert got.dtype == torch.float64
    assert_close(got, want, "float64 logits vs float32 logits", atol=1e-5, rtol=1e-5)


@pytest.mark.contract
@pytest.mark.clause("PT06.7")
def test_eval_and_train_reach_every_layer():
    model = build(0, dropout=0.5)

    model.eval()
    assert torch.equal(model(tokens()), model(tokens())), "eval logits differ between calls"
    model.train()
    assert not torch.equal(model(tokens()), model(tokens())), "train mode applied no dropout"


@pytest.mark.contract
@pytest.mark.clause("PT06.8")
def test_an_update_over_model_parameters_reaches_every_layer():
    # What an optimizer built from model.parameters() would do (torch.optim's first step is slow).
    model = build(0)
    before = [[p.detach().clone() for p in layer.parameters()] for layer in model.layers]

    model(tokens()).logsumexp(-1).mean().backward()
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:  # a parameter the loss never reached keeps its value
                p -= 0.1 * p.grad

    for i, (layer, old) in enumerate(zip(model.layers, before, strict=True)):
        moved = any(not torch.equal(p, q) for p, q in zip(layer.parameters(), old, strict=True))
        assert moved, f"layer {i} was not updated through model.parameters()"


@pytest.mark.contract
@pytest.mark.clause("PT06.9")
def test_an_appended_layer_is_registered_and_runs():
    model = build(0).eval()
    three = model(tokens())

    model.add_layer()

    assert len(model.layers) == 4
    new = {object_id(p) for p in model.layers[3].parameters()}
    registered = {
        object_id(p) for name, p in model.named_parameters() if name.startswith("layers.3.")
    }
    assert new and new == registered, "the appended layer is not registered as layers.3"
    got = model(tokens())
    assert_close(got, by_hand(model, tokens()), "logits after add_layer vs the four layers")
    assert not torch.equal(got, three), "the appended layer does not take part in forward"


@pytest.mark.contract
@pytest.mark.clause("PT06.9", "PT06.10")
def test_forward_runs_the_layers_held_by_the_registered_container():
    model, donor = build(0).eval(), build(1).eval()

    model.layers[1] = donor.layers[1]

    assert_close(model(tokens()), by_hand(model, tokens()), "logits after replacing layers[1]")


@pytest.mark.contract
@pytest.mark.clause("PT06.4", "PT06.5")
@settings(max_examples=8, deadline=None)
@given(n_layers=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_any_depth_registers_each_layer_once_and_round_trips(n_layers, seed):
    saved, fresh = build(seed, n_layers).eval(), build(seed + 1, n_layers).eval()

    ids = [object_id(p) for layer in saved.layers for p in layer.parameters()]
    assert len(ids) == len(set(ids)), "two layers share a parameter"
    assert set(ids) <= {object_id(p) for p in saved.parameters()}
    fresh.load_state_dict(saved.state_dict(), strict=True)
    assert torch.equal(fresh(tokens()), saved(tokens()))


@pytest.mark.contract
@pytest.mark.clause("PT06.1")
def test_the_constructor_takes_the_artifacts_arguments_and_dropout_defaults_to_zero():
    signature = inspect.signature(drill.TinyDecoder)
    try:
        bound = signature.bind(vocab_size=VOCAB, d_model=8, n_heads=2, n_layers=2)
    except TypeError as error:
        raise AssertionError(f"TinyDecoder{signature} lacks the artifact's arguments") from error
    bound.apply_defaults()
    assert bound.arguments.get("dropout") == 0.0, f"dropout defaults to {bound.arguments}"
    model = build(0)
    for name in ("embedding", "layers", "final_norm", "head"):
        assert hasattr(model, name), f"TinyDecoder has no attribute {name}"
    assert len(model.layers) == 3 and callable(model.add_layer)
    torch.manual_seed(0)
    default = drill.TinyDecoder(vocab_size=VOCAB, d_model=8, n_heads=2, n_layers=2).train()
    default.to(test_device())
    trained = default(tokens())
    same = torch.equal(trained, default.eval()(tokens()))
    assert same, "without a dropout argument, train and eval logits differ: dropout is not 0.0"


@pytest.mark.contract
@pytest.mark.clause("PT06.2", "PT06.3")
def test_logits_are_b_by_t_by_vocab_in_the_models_dtype():
    logits = build(0).eval()(tokens())
    assert tuple(logits.shape) == (2, 5, VOCAB), f"logits {tuple(logits.shape)}"
    assert logits.dtype == torch.float32, f"logits {logits.dtype}"


@pytest.mark.contract
@pytest.mark.clause("PT06.5")
def test_the_state_dict_holds_exactly_the_parts_keys():
    model = build(0, n_layers=2)
    want = {f"{part}.{name}" for part in ("embedding", "final_norm", "head")
            for name in getattr(model, part).state_dict()}  # fmt: skip
    want |= {f"layers.{i}.{name}" for i, layer in enumerate(model.layers)
             for name in layer.state_dict()}  # fmt: skip
    assert set(model.state_dict()) == want, sorted(set(model.state_dict()) ^ want)


@pytest.mark.contract
@pytest.mark.clause("PT06.6")
def test_a_float64_model_round_trips_and_matches_its_layers_by_hand():
    saved = build(0).eval().to(torch.float64)
    fresh = build(1).eval().to(torch.float64)
    for i, layer in enumerate(saved.layers):
        wrong = [n for n, p in layer.named_parameters() if p.dtype != torch.float64]
        assert not wrong, f"layer {i} kept {wrong} out of float64"
    fresh.load_state_dict(saved.state_dict(), strict=True)
    assert torch.equal(fresh(tokens()), by_hand(saved, tokens()))


@pytest.mark.contract
@pytest.mark.clause("PT06.7")
def test_every_layer_follows_the_models_mode():
    model = build(0, dropout=0.3)
    for mode in (False, True, False):
        model.train(mode)
        modes = [m.training for layer in model.layers for m in layer.modules()]
        assert modes and all(m == mode for m in modes), f"train({mode}) missed a layer: {modes}"


@pytest.mark.contract
@pytest.mark.clause("PT06.8")
def test_a_backward_pass_gives_every_layer_a_gradient_through_model_parameters():
    model = build(0)
    model(tokens()).logsumexp(-1).mean().backward()
    params = {object_id(p) for p in model.parameters()}
    for i, layer in enumerate(model.layers):
        for name, p in layer.named_parameters():
            assert object_id(p) in params, f"layer {i}'s {name} is not in model.parameters()"
            assert p.grad is not None and bool(p.grad.abs().sum() > 0), f"layer {i}'s {name}"


@pytest.mark.contract
@pytest.mark.clause("PT06.9")
def test_an_appended_layer_is_saved_and_loaded_with_the_rest():
    saved, fresh = build(0).eval(), build(1).eval()
    saved.add_layer()
    fresh.add_layer()
    assert any(key.startswith("layers.3.") for key in saved.state_dict()), "no layers.3 keys"
    fresh.load_state_dict(saved.state_dict(), strict=True)
    assert torch.equal(fresh(tokens()), saved(tokens()))


def artifact_module():
    """The supplied start file, imported on its own (its math is what the repair keeps)."""
    import importlib.util

    path = DRILLS["PT06"].starting_artifact()
    spec = importlib.util.spec_from_file_location("pt06_artifact_for_math", str(path))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.contract
@pytest.mark.clause("PT06.11")
@pytest.mark.parametrize("n_layers", [1, 3], ids=["one layer", "three layers"])
def test_the_repaired_model_computes_the_artifacts_math(n_layers):
    torch.manual_seed(7)
    start = artifact_module().TinyDecoder(vocab_size=VOCAB, d_model=8, n_heads=2,
                                          n_layers=n_layers).eval()  # fmt: skip
    state = dict(start.state_dict())  # the artifact's own keys miss its (listed) layers
    for i, layer in enumerate(start.layers):
        state.update({f"layers.{i}.{k}": v for k, v in layer.state_dict().items()})
    model = build(1, n_layers).eval().cpu()
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as error:
        raise AssertionError(f"the artifact's weights do not fit the repair: {error}") from error
    ids = tokens().cpu()
    want = start(ids)  # before the call: the call's writes cannot reach it
    assert_close(model(ids), want, "repaired logits vs the artifact's", atol=1e-6, rtol=1e-6)
