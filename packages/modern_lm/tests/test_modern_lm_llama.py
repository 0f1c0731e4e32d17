"""Logits equal Hugging Face transformers' LlamaForCausalLM loaded through the checkpoint
paths: an oracle nobody here wrote. Skipped (not failed) without transformers; transformers
is imported by a fixture, so contract runs that deselect these never pay for its import."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, test_device

pytestmark = [pytest.mark.contract, pytest.mark.owner("modern_checkpoint")]


@pytest.fixture(scope="module")
def transformers():
    return pytest.importorskip("transformers")


def llama(transformers, config, seed: int):
    """A seeded LlamaForCausalLM of the config's sizes (eager attention, no special tokens)."""
    llama_config = transformers.LlamaConfig(
        vocab_size=config.vocab_size,
        hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_hidden_layers,
        num_attention_heads=config.num_attention_heads,
        num_key_value_heads=config.num_key_value_heads,
        head_dim=config.head_dim,
        max_position_embeddings=config.max_position_embeddings,
        rms_norm_eps=config.rms_norm_eps,
        rope_theta=config.rope_theta,
        hidden_act="silu",
        tie_word_embeddings=config.tie_word_embeddings,
        attn_implementation="eager",
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = transformers.LlamaForCausalLM(llama_config)
        with torch.no_grad():  # random gains, so a norm read from the wrong path shows
            for name, parameter in model.named_parameters():
                if name.endswith("norm.weight"):
                    parameter.uniform_(0.5, 1.5)
    return model.to(test_device()).eval()


@pytest.mark.clause("M02.33")
@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
def test_logits_equal_llama_for_causal_lm(m02, transformers, tied):
    config = m02.config(tie_word_embeddings=tied)
    reference = llama(transformers, config, seed=1)
    state = {k: v for k, v in reference.state_dict().items() if not k.endswith("inv_freq")}
    state.setdefault("lm_head.weight", state["model.embed_tokens.weight"])
    model = m02.loaded(config, state)
    ids, positions = m02.ids(3, 9, config.vocab_size, seed=2), m02.positions([0, 6, 41], 9)
    positions[0] = m02.gapped_positions(1, 9, seed=3)[0]  # one row with gaps
    with torch.no_grad():
        expected = reference(input_ids=ids, position_ids=positions).logits
    assert_close(model(ids, positions=positions).logits, expected, "logits vs LlamaForCausalLM")
