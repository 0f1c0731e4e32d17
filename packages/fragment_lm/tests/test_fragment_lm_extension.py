"""This package's own rules beyond the kit's words (M10.13, M10.14): never scored."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import candidate
from gptlab_testkit.objects import assert_same_object

fragment = candidate("FRAGMENT_LM_MODULE")

pytestmark = [pytest.mark.extension, pytest.mark.owner("fragment_boundary")]


@pytest.mark.clause("M10.13")
@pytest.mark.parametrize("name", ["use_cache", "return_router_state"])
def test_a_flag_that_is_not_a_bool_is_a_type_error_naming_it(m10, name):
    config = m10.config()
    model = m10.loaded(config, m10.random_state(config, seed=120))
    ids, positions = m10.ids(1, 3, seed=121), m10.runs([0], 3)
    with pytest.raises(TypeError, match=name):
        model(ids, positions, **{name: 1})


@pytest.mark.clause("M10.13")
def test_a_config_of_another_kind_is_a_type_error(m10):
    with pytest.raises(TypeError, match="config"):
        fragment.PaperFragmentLM(dict(m10.plain().__dict__))


@pytest.mark.clause("M10.13")
def test_generate_gives_the_greedy_tokens_of_the_cached_loop(m10):
    config = m10.config()
    model = m10.loaded(config, m10.random_state(config, seed=122))
    prompt = [4, 8, 15, 16]
    out = model.generate(torch.tensor([prompt]), torch.arange(4)[None], 5)
    ids = torch.tensor([prompt])
    for _ in range(5):  # recompute the whole prefix each step: no cache at all
        logits = model(ids, torch.arange(ids.shape[1])[None]).logits
        ids = torch.cat((ids, logits[:, -1:].argmax(dim=-1)), dim=1)
    assert out.tolist() == ids.tolist()


@pytest.mark.clause("M10.14")
@pytest.mark.parametrize("case", ["missing", "unexpected", "misshaped"])
def test_a_checkpoint_that_does_not_fit_changes_nothing(m10, case):
    config = m10.config()
    model = m10.model(config, seed=123)
    state = dict(m10.random_state(config, seed=124))
    key = "model.layers.1.mlp.experts.2.up_proj.weight"
    if case == "missing":
        del state[key]
    elif case == "unexpected":
        state["model.layers.1.mlp.experts.9.up_proj.weight"] = state[key]
    else:
        state[key] = state[key][:, :-1]
    before = {name: t.clone() for name, t in model.state_dict().items()}
    with pytest.raises((RuntimeError, ValueError)):
        model.load_state_dict(state, strict=True)
    after = model.state_dict()
    assert all(torch.equal(after[name], t) for name, t in before.items())
    assert_same_object(
        model.lm_head.weight, model.model.embed_tokens.weight, "lm_head and embed_tokens weights"
    )
