"""PT09 FusedQKV.load_qkv_(source, transposed): a strict load of q/k/v_proj into one qkv."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from gptlab_testkit import BAD_VALUE, assert_close, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_PT09_MODULE")

pytestmark = [pytest.mark.owner("pt09"), pytest.mark.contract]

IN = 6
PARTS = ("q_proj", "k_proj", "v_proj")
# (q_rows, kv_rows): multi-head, grouped-query, multi-query
SPLITS = {"MHA": (4, 4), "GQA": (8, 2), "MQA": (6, 1)}


def build(q_rows: int = 8, kv_rows: int = 2, bias: bool = True, seed: int = 0):
    torch.manual_seed(seed)
    module = drill.FusedQKV(in_features=IN, q_rows=q_rows, kv_rows=kv_rows, bias=bias)
    return module.to(test_device())


def checkpoint(q_rows: int = 8, kv_rows: int = 2, bias: bool = True, seed: int = 1) -> dict:
    """What three separate linears save: {q,k,v}_proj.weight [rows, IN] (and .bias [rows])."""
    state = {}
    for i, (part, rows) in enumerate(zip(PARTS, (q_rows, kv_rows, kv_rows), strict=True)):
        state[f"{part}.weight"] = seeded(rows, IN, seed=seed * 10 + i)
        if bias:
            state[f"{part}.bias"] = seeded(rows, seed=seed * 10 + i + 5)
    return state


def separate_linears(x: torch.Tensor, state: dict) -> torch.Tensor:
    outs = [F.linear(x, state[f"{p}.weight"], state.get(f"{p}.bias")) for p in PARTS]
    return torch.cat(outs, dim=-1)


def load(module, *args, **kwargs) -> None:
    """A valid load: a refusal from it is a failed check, not a crash."""
    try:
        module.load_qkv_(*args, **kwargs)
    except (ValueError, TypeError, RuntimeError) as error:
        raise AssertionError(f"a valid load failed: {type(error).__name__}: {error}") from error


def module_state(module) -> dict:
    return {name: tensor.detach().clone() for name, tensor in module.state_dict().items()}


@pytest.mark.clause("PT09.1")
def test_the_constructor_and_the_loader_take_their_arguments_by_position_and_name():
    assert_binds(drill.FusedQKV, IN, 8, 2, True)
    assert_binds(drill.FusedQKV, in_features=IN, q_rows=8, kv_rows=2, bias=False)
    module = drill.FusedQKV(IN, 8, 2, True).to(test_device())
    state = checkpoint()
    load(module, state)
    by_name = build(seed=3)
    load(by_name, source=state, transposed=False)
    assert torch.equal(module.qkv.weight, by_name.qkv.weight), "by position vs by name"


@pytest.mark.clause("PT09.2", "PT09.3")
@pytest.mark.parametrize("split", sorted(SPLITS))
def test_the_fused_rows_are_q_then_k_then_v(split):
    q_rows, kv_rows = SPLITS[split]
    module, state = build(q_rows, kv_rows), checkpoint(q_rows, kv_rows)
    # the oracle first: the call's writes cannot reach it
    want = torch.cat([state[f"{p}.weight"] for p in PARTS])

    load(module, state)

    weight = module.qkv.weight
    assert tuple(weight.shape) == (q_rows + 2 * kv_rows, IN), tuple(weight.shape)
    assert torch.equal(weight.detach(), want), f"{split}: the fused rows are not Q, K, V"


@pytest.mark.clause("PT09.2", "PT09.3", "PT09.4")
@pytest.mark.parametrize("split", sorted(SPLITS))
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no bias"])
def test_the_fused_projection_equals_three_separate_linears(split, bias):
    q_rows, kv_rows = SPLITS[split]
    module, state = build(q_rows, kv_rows, bias), checkpoint(q_rows, kv_rows, bias)
    x = seeded(2, 3, IN, seed=7)
    # the oracle first: the call's writes cannot reach it
    want = separate_linears(x, state)

    load(module, state)

    got = module(x)
    assert tuple(got.shape) == (2, 3, q_rows + 2 * kv_rows), tuple(got.shape)
    assert_close(got, want, f"{split}, bias={bias}")


@pytest.mark.clause("PT09.4")
def test_a_biased_module_takes_the_three_biases_in_order():
    module, state = build(), checkpoint()
    # the oracle first: the call's writes cannot reach it
    want = torch.cat([state[f"{p}.bias"] for p in PARTS])

    load(module, state)

    assert torch.equal(module.qkv.bias.detach(), want), "the fused bias is not Q, K, V"


@pytest.mark.clause("PT09.4")
def test_a_bias_free_module_has_no_bias_and_loads_weights_only():
    module = build(bias=False)
    assert module.qkv.bias is None, "a bias-free module holds a bias"

    load(module, checkpoint(bias=False))

    assert set(module.state_dict()) == {"qkv.weight"}, sorted(module.state_dict())


@pytest.mark.clause("PT09.10")
def test_a_shard_iterator_of_pairs_loads_like_a_mapping():
    state = checkpoint()
    from_pairs, from_mapping = build(seed=2), build(seed=3)

    load(from_pairs, list(reversed(list(state.items()))))
    load(from_mapping, state)

    for name, tensor in from_mapping.state_dict().items():
        assert torch.equal(from_pairs.state_dict()[name], tensor), f"{name}: pairs vs mapping"


@pytest.mark.clause("PT09.10")
def test_the_source_is_only_read_and_never_kept():
    module, state = build(), checkpoint()
    x = seeded(2, IN, seed=8)

    with inputs_untouched(**{k.replace(".", "_"): v for k, v in state.items()}):
        load(module, state)
    want = module(x).detach().clone()
    for tensor in state.values():
        tensor.add_(1.0)

    assert torch.equal(module(x), want), "writing the checkpoint after the load moved the module"


# ---- rejection: one thing wrong, nothing loaded ----


def refused(module, source, names, transposed: bool = False) -> None:
    before = module_state(module)
    assert_rejects(lambda: module.load_qkv_(source, transposed=transposed), BAD_VALUE, names)
    after = module_state(module)
    for name, tensor in before.items():
        assert torch.equal(after[name], tensor), f"{name} changed before the source was refused"


@pytest.mark.clause("PT09.5")
@pytest.mark.parametrize("key", ["q_proj.weight", "v_proj.weight", "v_proj.bias"])
def test_a_missing_name_is_refused_and_nothing_is_loaded(key):
    state = checkpoint()
    del state[key]
    refused(build(), state, key)


@pytest.mark.clause("PT09.5")
@pytest.mark.parametrize("key", ["o_proj.weight", "v_proj.weights", "layers.0.k_proj.weight"])
def test_an_unexpected_name_is_refused_and_nothing_is_loaded(key):
    state = checkpoint()
    state[key] = seeded(2, IN, seed=9)
    refused(build(), state, key)


@pytest.mark.clause("PT09.4", "PT09.5")
def test_a_bias_for_a_bias_free_module_is_refused():
    state = checkpoint(bias=False)
    state["k_proj.bias"] = seeded(2, seed=9)
    refused(build(bias=False), state, "k_proj.bias")


@pytest.mark.clause("PT09.4", "PT09.5")
def test_a_biased_module_refuses_a_checkpoint_without_biases():
    refused(build(bias=True), checkpoint(bias=False), ("q_proj.bias", "k_proj.bias", "v_proj.bias"))


@pytest.mark.clause("PT09.6")
@pytest.mark.parametrize("key", ["k_proj.weight", "v_proj.bias"])
def test_a_name_given_twice_is_refused_even_with_equal_values(key):
    state = checkpoint()
    pairs = [*state.items(), (key, state[key].clone())]
    refused(build(), pairs, key)


@pytest.mark.clause("PT09.7")
@pytest.mark.parametrize(
    ("key", "shape"),
    [("k_proj.weight", (3, IN)), ("q_proj.weight", (8, IN + 1)), ("v_proj.bias", (3,)),
     ("v_proj.weight", (2, IN, 1))],
    ids=["k rows", "in features", "bias length", "rank 3"],
)  # fmt: skip
def test_a_misshaped_source_is_refused_and_nothing_is_loaded(key, shape):
    state = checkpoint()
    state[key] = seeded(*shape, seed=9)
    refused(build(), state, key)


@pytest.mark.clause("PT09.7")
def test_rows_moved_from_v_to_k_are_refused_though_the_total_fits():
    state = checkpoint(q_rows=8, kv_rows=2)
    state["k_proj.weight"], state["k_proj.bias"] = seeded(3, IN, seed=4), seeded(3, seed=4)
    state["v_proj.weight"], state["v_proj.bias"] = seeded(1, IN, seed=5), seeded(1, seed=5)
    refused(build(8, 2), state, ("k_proj.weight", "k_proj.bias", "v_proj.weight", "v_proj.bias"))


@pytest.mark.clause("PT09.8")
@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16], ids=str)
@pytest.mark.parametrize("key", ["v_proj.weight", "q_proj.bias"])
def test_a_source_in_another_dtype_is_refused(key, dtype):
    state = checkpoint()
    state[key] = state[key].to(dtype)
    refused(build(), state, key)


def conv1d_checkpoint(q_rows: int = 8, kv_rows: int = 2) -> dict:
    """A Conv1D-style checkpoint: each weight stored [IN, rows]."""
    state = checkpoint(q_rows, kv_rows)
    return {k: (v.T.contiguous() if k.endswith(".weight") else v) for k, v in state.items()}


@pytest.mark.clause("PT09.9")
@pytest.mark.parametrize("key", ["q_proj.weight", "k_proj.weight"])
def test_a_transposed_source_is_refused_unless_declared(key):
    state = checkpoint()
    state[key] = state[key].T.contiguous()
    refused(build(), state, key)


@pytest.mark.clause("PT09.9")
def test_a_declared_transposed_checkpoint_loads_as_its_linears():
    state = conv1d_checkpoint()
    module = build()
    x = seeded(3, IN, seed=6)
    # the oracle first: the call's writes cannot reach it
    as_linears = {k: (v.T if k.endswith(".weight") else v) for k, v in state.items()}
    want = separate_linears(x, as_linears)

    load(module, state, transposed=True)

    assert_close(module(x), want, "Conv1D-style checkpoint")


@pytest.mark.clause("PT09.9")
def test_a_row_major_source_is_refused_when_transposed_is_declared():
    refused(build(), checkpoint(), ("q_proj.weight", "k_proj.weight", "v_proj.weight"), True)
