"""Equality with Hugging Face transformers' Mixtral on the same weights: an oracle nobody
here wrote. Skipped (not failed) without transformers; the fused expert tensors are split
per expert by the test itself, so a candidate is graded on the contract's paths alone."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, test_device

pytestmark = [pytest.mark.contract, pytest.mark.owner("moe_model")]


@pytest.fixture(scope="module")
def transformers():
    return pytest.importorskip("transformers")


def mixtral_config(transformers, m05, **overrides):
    sizes = {**m05.plain_config().__dict__, **overrides}
    return transformers.MixtralConfig(
        vocab_size=sizes["vocab_size"],
        hidden_size=sizes["hidden_size"],
        intermediate_size=sizes["intermediate_size"],
        num_hidden_layers=sizes["num_hidden_layers"],
        num_attention_heads=sizes["num_attention_heads"],
        num_key_value_heads=sizes["num_key_value_heads"],
        head_dim=sizes["head_dim"],
        max_position_embeddings=sizes["max_position_embeddings"],
        rms_norm_eps=sizes["rms_norm_eps"],
        rope_theta=sizes["rope_theta"],
        num_local_experts=sizes["num_experts"],
        num_experts_per_tok=sizes["experts_per_token"],
        sliding_window=None,
        router_jitter_noise=0.0,
        hidden_act="silu",
        tie_word_embeddings=False,
        attn_implementation="eager",
        experts_implementation="eager",
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )


def split_experts(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Mixtral's fused `experts.gate_up_proj [E, 2F, C]` (gate rows first) and
    `experts.down_proj [E, C, F]` as per-expert tensors under the contract's paths."""
    out = {}
    for key, tensor in state.items():
        if key.endswith("experts.gate_up_proj"):
            block = key.removesuffix("gate_up_proj")
            for e, weight in enumerate(tensor):
                gate, up = weight.chunk(2, dim=0)
                out[f"{block}{e}.gate_proj.weight"] = gate.clone()
                out[f"{block}{e}.up_proj.weight"] = up.clone()
        elif key.endswith("experts.down_proj"):
            block = key.removesuffix("down_proj")
            for e, weight in enumerate(tensor):
                out[f"{block}{e}.down_proj.weight"] = weight.clone()
        elif not key.endswith("inv_freq"):
            out[key] = tensor.clone()
    return out


def seeded_mixtral(transformers, module, seed: int):
    """Mixtral's parameters start uninitialised when built alone: fill every one."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in module.named_parameters():
            if name.endswith("norm.weight"):
                values = torch.rand(parameter.shape, generator=generator) + 0.5
            elif name.endswith("gate.weight") or name.endswith("embed_tokens.weight"):
                values = torch.randn(parameter.shape, generator=generator)
            else:
                values = torch.randn(parameter.shape, generator=generator) * 0.3
            parameter.copy_(values)
    return module.to(test_device()).eval()


@pytest.mark.clause("M05.16")
@pytest.mark.parametrize("k", [1, 2])
def test_block_equals_mixtral_sparse_moe_block(m05, transformers, k):
    from transformers.models.mixtral import modeling_mixtral

    config = mixtral_config(
        transformers,
        m05,
        hidden_size=16,
        intermediate_size=24,
        num_attention_heads=2,
        experts_per_token=k,
    )
    reference = seeded_mixtral(
        transformers, modeling_mixtral.MixtralSparseMoeBlock(config), 160 + k
    )
    block = m05.loaded_block(split_experts(reference.state_dict()), k=k)
    x = m05.tokens(3, 7, seed=161)
    with torch.no_grad():
        expected = reference(x.clone())
    assert_close(block(x).hidden_states, expected, f"vs MixtralSparseMoeBlock, top-{k}")


@pytest.mark.clause("M05.16")
def test_lm_logits_equal_mixtral_for_causal_lm(m05, transformers):
    config = m05.config(moe_layers=None)
    reference = seeded_mixtral(
        transformers, transformers.MixtralForCausalLM(mixtral_config(transformers, m05)), 162
    )
    model = m05.loaded_lm(config, split_experts(reference.state_dict()))
    ids = m05.ids(3, 9, config.vocab_size, seed=163)
    positions = m05.gapped_positions(3, 9, seed=164)
    with torch.no_grad():  # an all-ones mask: gapped positions are not packed sequences
        expected = reference(
            input_ids=ids, position_ids=positions, attention_mask=torch.ones_like(ids)
        ).logits
    logits = model(ids, positions=positions).logits
    assert_close(logits, expected, "logits vs MixtralForCausalLM", atol=1e-4, rtol=1e-4)
