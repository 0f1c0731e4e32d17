"""Hugging Face transformers' LlamaForCausalLM through load_weights (M04.12).

The Llama model is built locally from a random small config (no download). transformers
attends block-diagonally when position ids jump and no mask is given, so each request is
run alone with an all-ones attention mask; its rope base goes in ``rope_parameters``.
"""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, candidate, test_device

rt = candidate("RUNTIME_LM_MODULE")

pytestmark = [pytest.mark.contract, pytest.mark.owner("runtime_loading")]

SIZES = {
    "vocab_size": 29,
    "hidden_size": 32,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "intermediate_size": 40,
    "max_position_embeddings": 64,
    "rms_norm_eps": 1e-5,
}
THETA = 100.0


@pytest.fixture(scope="module")
def transformers():
    return pytest.importorskip("transformers")


def llama(transformers, tied: bool):
    config = transformers.LlamaConfig(
        **SIZES,
        rope_parameters={"rope_type": "default", "rope_theta": THETA},
        tie_word_embeddings=tied,
        hidden_act="silu",
        attention_bias=False,
        mlp_bias=False,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(61 + tied)
        model = transformers.LlamaForCausalLM(config)
        with torch.no_grad():  # norm gains away from 1, so a skipped gain shows
            for name, parameter in model.named_parameters():
                if name.endswith("norm.weight"):
                    parameter.uniform_(0.5, 1.5)
    return model.to(test_device()).eval()


def llama_logits(model, ids, positions):
    with torch.no_grad():
        out = model(
            ids[None],
            position_ids=positions[None],
            attention_mask=torch.ones(1, len(ids), dtype=torch.long, device=ids.device),
        )
    return out.logits[0]


def ours(m04, **overrides):
    return rt.RuntimeLMConfig(**SIZES, rope_theta=THETA, **overrides)


def check_requests(m04, hf, logits, requests):
    start = 0
    for ids, positions in requests:
        n = len(ids)
        if n:
            assert_close(logits[start : start + n], llama_logits(hf, ids, positions))
        start += n


@pytest.mark.clause("M04.12")
@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
def test_llama_logits_through_load_weights(m04, transformers, tied):
    hf = llama(transformers, tied)
    model = m04.model(ours(m04, tie_word_embeddings=tied), seed=99)
    model.load_weights(iter(list(hf.state_dict().items())))
    requests = m04.requests([4, 0, 6, 1, 3], seed=62)

    logits = model.compute_logits(m04.run(model, requests))

    assert tuple(logits.shape) == (14, 29)
    check_requests(m04, hf, logits, requests)


@pytest.mark.clause("M04.12")
def test_llama_logits_through_two_stages(m04, transformers):
    hf = llama(transformers, False)
    state = list(hf.state_dict().items())
    first = m04.model(ours(m04, pipeline_size=2, pipeline_rank=0), seed=98)
    last = m04.model(ours(m04, pipeline_size=2, pipeline_rank=1), seed=97)
    first.load_weights(iter(state))
    last.load_weights(iter(state))
    requests = m04.requests([5, 2, 4], seed=63)
    ids, positions, offsets = m04.flat(requests)

    rt.set_attention_context(offsets)
    logits = last.compute_logits(last(None, positions, intermediate_tensors=first(ids, positions)))

    check_requests(m04, hf, logits, requests)
