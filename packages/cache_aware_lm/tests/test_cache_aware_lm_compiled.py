"""The compiled decode path: its static step, eager and inductor-compiled, equals the references.

``CompiledDecoder`` runs one static-shape step per token. Each test runs twice:
``eager`` (the same static step uncompiled; cheap, in the package's own session)
and ``compiled`` (inductor with freezing, ``dynamic=False``), which compiles once per
variant and so runs only where ``GPTLAB_COMPILED_TESTS=1`` (``nox -s compiled``,
in a bounded time on the tiny test models). The compiled tests use inductor's
default mode unless ``GPTLAB_COMPILE_MODE`` names another (the benchmarks use
``max-autotune-no-cudagraphs``, whose autotuning costs minutes cold).

Oracles: ``serve_generate`` (tokens), the model's own ``generate``, and one
uncached forward over the generated sequence (logits, fp32 tolerance).
"""

from __future__ import annotations

import os

import pytest
import torch
from torch import Tensor

from cache_aware_lm.compiled import CompiledDecoder
from gptlab_testkit import assert_close, candidate, test_device
from gptlab_testkit.models import cache_aware_modules

cam = candidate("CACHE_AWARE_LM_MODULE")
kvc = candidate("KV_CACHE_MODULE")
VARIANTS = cache_aware_modules()
COMPILED = os.environ.get("GPTLAB_COMPILED_TESTS") == "1"
MODE = os.environ.get("GPTLAB_COMPILE_MODE", "default")

pytestmark = [
    pytest.mark.extension,
    pytest.mark.owner("compiled_decode"),
    pytest.mark.skipif("candidate" in VARIANTS, reason="the compiled path runs the references"),
]

BATCH, CAPACITY = 2, 24
ORIGINS = [0, 3]  # rows share their slots, not their positions


@pytest.fixture(scope="module", params=list(VARIANTS))
def model(request):
    return VARIANTS[request.param].make_test_model().to(test_device())


@pytest.fixture(
    scope="module",
    params=[
        "eager",
        pytest.param(
            "compiled",
            marks=pytest.mark.skipif(not COMPILED, reason="compiled: run by `nox -s compiled`"),
        ),
    ],
)
def decoder(request, model):
    compiled = request.param == "compiled"
    return CompiledDecoder(model, BATCH, CAPACITY, compile=compiled, mode=MODE)


def prompt(length: int, seed: int) -> tuple[Tensor, Tensor]:
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 16, (BATCH, length), generator=generator).to(test_device())
    origins = torch.tensor(ORIGINS, device=test_device())[:, None]
    return ids, origins + torch.arange(length, device=test_device())


def serving_tokens(model, ids: Tensor, positions: Tensor, budget: int) -> Tensor:
    geometry = model.geometry
    storage = kvc.KVCache(
        geometry.n_layers, BATCH, geometry.n_kv_heads, ids.shape[1] + budget,
        geometry.head_dim, device=test_device(), start_positions=positions[:, 0].clone(),
    )  # fmt: skip
    return cam.serve_generate(model, ids, positions, budget, storage)


@pytest.mark.parametrize(("length", "budget", "seed"), [(1, 12, 0), (5, 14, 1), (9, 15, 2)])
def test_greedy_tokens_equal_the_serving_path(model, decoder, length, budget, seed):
    ids, positions = prompt(length, seed)
    expected = serving_tokens(model, ids, positions, budget)
    assert torch.equal(decoder.generate(ids, positions, budget), expected)
    with torch.no_grad():
        assert torch.equal(expected, model.generate(ids, positions, budget))


def test_step_logits_equal_an_uncached_forward(model, decoder):
    """Every step's logits, rows at different origins, against one full forward."""
    ids, positions = prompt(4, seed=3)
    tokens = decoder.generate(ids, positions, 10)
    full_positions = positions[:, :1] + torch.arange(tokens.shape[1], device=test_device())
    with torch.no_grad():
        expected = model(tokens, full_positions).logits[:, 3:-1]  # rows that chose new tokens
    with torch.inference_mode():
        rows = [decoder.prefill(ids, positions)]
        for slot in range(4, tokens.shape[1] - 1):
            rows.append(
                decoder.step(tokens[:, slot : slot + 1], full_positions[:, slot : slot + 1], slot)
            )
    assert_close(torch.stack(rows, dim=1), expected)


def test_a_second_request_reuses_the_graph_and_ignores_stale_slots(model, decoder):
    """The cache keeps the first request's K/V beyond the second's prefix: masked, not read."""
    long_ids, long_positions = prompt(8, seed=4)
    decoder.generate(long_ids, long_positions, 14)  # fills 22 slots
    ids, positions = prompt(2, seed=5)
    expected = serving_tokens(model, ids, positions, 6)
    with torch._dynamo.config.patch(error_on_recompile=True):
        assert torch.equal(decoder.generate(ids, positions, 6), expected)


def test_eos_rule_equals_generate():
    """A row that emits EOS keeps emitting it; the loop stops once all rows have."""
    for module in VARIANTS.values():
        model = module.make_eos_test_model().to(test_device())
        decoder = CompiledDecoder(model, BATCH, CAPACITY, compile=False)
        ids = torch.tensor([[1], [4]], device=test_device())
        positions = torch.zeros_like(ids)
        with torch.no_grad():
            expected = model.generate(ids, positions, 12, eos_token_id=0)
        assert torch.equal(decoder.generate(ids, positions, 12, eos_token_id=0), expected)


@pytest.mark.parametrize(
    ("case", "match"),
    [
        ("batch", "batch_size"),
        ("capacity", "capacity"),
        ("gap", "position"),
        ("budget", "max_new_tokens"),
    ],
)
def test_a_malformed_request_is_rejected_before_anything_runs(model, case, match):
    decoder = CompiledDecoder(model, BATCH, CAPACITY, compile=False)
    ids, positions = prompt(4, seed=6)
    budget = 6
    if case == "batch":
        ids, positions = ids[:1], positions[:1]
    elif case == "capacity":
        budget = CAPACITY - 3  # 4 + 21 > 24
    elif case == "gap":
        positions = positions.clone()
        positions[1, 2:] += 1  # row 1, not row 0
    elif case == "budget":
        budget = -1
    before = [tensor.clone() for pair in decoder.cache for tensor in pair]
    with pytest.raises(ValueError, match=match):
        decoder.generate(ids, positions, budget)
    after = [tensor for pair in decoder.cache for tensor in pair]
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))
    assert decoder.compile_seconds is None  # nothing compiled or run


@pytest.mark.parametrize(("batch", "capacity"), [(0, 8), (2, 0), (True, 8), (2, 10_000)])
def test_bad_decoder_sizes_are_rejected(model, batch, capacity):
    with pytest.raises(ValueError, match="batch_size|capacity"):
        CompiledDecoder(model, batch, capacity, compile=False)
