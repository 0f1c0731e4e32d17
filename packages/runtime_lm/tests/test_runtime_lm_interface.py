"""M04's interface (M04.1), checkpoint names and prefixes (M04.2), determinism (M04.13)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from gptlab_testkit import assert_close, candidate
from gptlab_testkit.objects import assert_instance

rt = candidate("RUNTIME_LM_MODULE")

pytestmark = [pytest.mark.contract, pytest.mark.owner("runtime_interface")]


@pytest.mark.clause("M04.1")
def test_config_is_m02s_frozen_config_with_a_pipeline_stage(m04):
    config = m04.config()
    fields = {field.name: field.default for field in dataclasses.fields(config)}

    assert fields["pipeline_rank"] == 0 and fields["pipeline_size"] == 1
    assert fields["rope_theta"] == 10000.0 and fields["rms_norm_eps"] == 1e-6
    assert fields["tie_word_embeddings"] is False and fields["dropout"] == 0.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.pipeline_rank = 1  # type: ignore[misc]


@pytest.mark.clause("M04.1")
def test_model_is_a_module(m04):
    assert_instance(m04.model(m04.config()), torch.nn.Module, "RuntimeCausalLM(config)")


@pytest.mark.clause("M04.1")
def test_model_has_the_runtime_methods(m04):
    model = m04.model(m04.config())

    for method in ("embed_input_ids", "forward", "compute_logits", "load_weights"):
        assert callable(getattr(model, method)), method
    loaded = model.load_weights(m04.pairs(m04.random_state(m04.sizes(), seed=1)))
    assert isinstance(loaded, set) and all(isinstance(name, str) for name in loaded)


@pytest.mark.clause("M04.1")
def test_intermediate_tensors_hold_a_dict_of_tensors():
    tensors = {"hidden_states": torch.ones(3, 4)}
    holder = rt.IntermediateTensors(tensors)

    held = getattr(holder, "tensors", None)
    assert isinstance(held, dict), "IntermediateTensors(tensors) must keep them as .tensors"
    assert sorted(held) == ["hidden_states"]
    assert torch.equal(held["hidden_states"], torch.ones(3, 4))


@pytest.mark.clause("M04.2")
@pytest.mark.parametrize("prefix", ["", "language_model"])
def test_state_dict_keys_are_the_checkpoint_table(m04, prefix):
    sizes = m04.sizes()
    model = m04.model(m04.config(), prefix=prefix)
    expected = {
        "model.embed_tokens.weight": (29, 32),
        **m04.packed_shapes(sizes),
        "model.norm.weight": (32,),
        "lm_head.weight": (29, 32),
    }
    shapes = {name: tuple(tensor.shape) for name, tensor in model.state_dict().items()}

    assert shapes == expected


@pytest.mark.clause("M04.2")
def test_state_dict_names_are_stable_across_constructions(m04):
    first = list(m04.model(m04.config(), seed=0).state_dict())
    second = list(m04.model(m04.config(), seed=5).state_dict())
    named = [name for name, _ in m04.model(m04.config(), seed=3).named_parameters()]

    assert first and first == second
    assert len(set(named)) == len(named) and set(named) <= set(first)


@pytest.mark.clause("M04.2")
@pytest.mark.parametrize(("rank", "layers"), [(0, range(0, 1)), (1, range(1, 3))])
def test_a_stage_holds_its_layers_under_global_names(m04, rank, layers):
    sizes = m04.sizes(num_hidden_layers=3)
    config = m04.config(num_hidden_layers=3, pipeline_size=2, pipeline_rank=rank)
    shapes = {name: tuple(t.shape) for name, t in m04.model(config).state_dict().items()}
    expected = m04.packed_shapes(sizes, layers)
    if rank == 0:
        expected["model.embed_tokens.weight"] = (29, 32)
    else:
        expected.update({"model.norm.weight": (32,), "lm_head.weight": (29, 32)})

    assert shapes == expected


@pytest.mark.clause("M04.2")
@pytest.mark.parametrize("prefix", [None, "", "language_model"], ids=["default", "empty", "named"])
def test_nested_modules_carry_their_paths_as_prefixes(m04, prefix):
    model = m04.model(m04.config(num_hidden_layers=3), prefix=prefix)
    paths = ["model"]
    for i in range(3):
        paths += [f"model.layers.{i}", f"model.layers.{i}.self_attn", f"model.layers.{i}.mlp"]
    found = [model.get_submodule(path).prefix for path in paths]

    assert found == [f"{prefix}.{path}" if prefix else path for path in paths]  # None: ""
    assert len(set(found)) == len(found)


@pytest.mark.clause("M04.2")
def test_a_later_stages_prefixes_keep_global_layer_indices(m04):
    config = m04.config(num_hidden_layers=3, pipeline_size=2, pipeline_rank=1)
    model = m04.model(config, prefix="lm")

    assert model.get_submodule("model.layers.2.self_attn").prefix == "lm.model.layers.2.self_attn"
    assert model.get_submodule("model.layers.1.mlp").prefix == "lm.model.layers.1.mlp"


@pytest.mark.clause("M04.13")
@pytest.mark.parametrize(
    "overrides",
    [{}, {"tie_word_embeddings": True}, {"pipeline_size": 2, "pipeline_rank": 1}],
    ids=["one-stage", "tied", "second-stage"],
)
def test_seeded_constructions_are_equal(m04, overrides):
    first = m04.model(m04.config(**overrides), seed=7).state_dict()
    second = m04.model(m04.config(**overrides), seed=7).state_dict()

    assert all(torch.equal(first[name], second[name]) for name in first)
    assert any(not torch.equal(t, torch.zeros_like(t)) for t in first.values())


@pytest.mark.clause("M04.13")
def test_repeated_calls_give_equal_outputs(m04):
    state = m04.random_state(m04.sizes(), seed=2)
    model = m04.loaded(m04.config(), state)
    requests = m04.requests([3, 4], seed=5)

    first = m04.run(model, requests)
    second = m04.run(model, requests)

    assert torch.equal(first, second)
    assert_close(first, m04.flat_hidden(m04.sizes(), state, requests).float())
