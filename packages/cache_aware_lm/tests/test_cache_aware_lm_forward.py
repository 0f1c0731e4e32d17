"""Forward shapes, returned metadata, use_cache and the test-model factories."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, test_device
from gptlab_testkit.models import cache_aware_modules

MODULES = cache_aware_modules()
# The candidates these contract tests grade: M03 and its advanced branch (over M02).
GRADED_FOR = ("CACHE_AWARE_LM_MODULE", "CACHE_AWARE_MODERN_MODULE")
pytestmark = [
    pytest.mark.contract,
    pytest.mark.parametrize("lm", list(MODULES.values()), ids=list(MODULES)),
]


def _tokens(batch: int, length: int, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, 16, (batch, length), generator=generator).to(test_device())


def _positions(origins: list[int], length: int) -> torch.Tensor:
    device = test_device()
    return torch.tensor(origins, device=device)[:, None] + torch.arange(length, device=device)


@pytest.mark.owner("cache_metadata")
def test_forward_returns_shapes_and_fresh_metadata(lm):
    model = lm.make_test_model().to(test_device())
    ids, positions = _tokens(2, 5), _positions([3, 0], 5)
    out = model(ids, positions, use_cache=True)
    assert out.logits.shape[:2] == (2, 5)
    assert out.logits.shape[2] >= 16
    assert len(out.past_key_values) >= 2
    first_key = out.past_key_values[0][0]
    for key, value in out.past_key_values:
        assert key.shape == value.shape == first_key.shape
        assert key.shape[0] == 2
        assert key.shape[2] == 5, "storage length must be the largest new row length (T)"
    assert out.cache_lengths.dtype == torch.long
    assert out.cache_lengths.tolist() == [5, 5]
    assert out.cache_start_positions.dtype == torch.long
    assert out.cache_start_positions.tolist() == [3, 0], "starts must be positions[:, 0]"


@pytest.mark.owner("cache_metadata")
def test_cached_call_advances_lengths_and_keeps_starts(lm):
    model = lm.make_test_model().to(test_device())
    ids = _tokens(2, 7, seed=1)
    positions = _positions([4, 1], 7)
    prefix = model(ids[:, :4], positions[:, :4], use_cache=True)
    out = model(
        ids[:, 4:],
        positions[:, 4:],
        past_key_values=prefix.past_key_values,
        cache_lengths=prefix.cache_lengths,
        cache_start_positions=prefix.cache_start_positions,
        use_cache=True,
    )
    assert out.cache_lengths.tolist() == [7, 7]
    assert out.cache_start_positions.tolist() == [4, 1]
    assert all(key.shape[2] == 7 for key, _ in out.past_key_values)


@pytest.mark.owner("cache_metadata")
def test_output_storage_is_largest_new_row_length(lm, padded_cache):
    model = lm.make_test_model().to(test_device())
    past, lengths, starts = padded_cache(model, [[1, 2], [3, 4, 5, 6], [7]], [5, 0, 2], 3)
    assert past[0][0].shape[2] == 7
    T = 2
    out = model(
        _tokens(3, T, seed=2),
        (starts + lengths)[:, None] + torch.arange(T, device=test_device()),
        past_key_values=past,
        cache_lengths=lengths,
        cache_start_positions=starts,
        use_cache=True,
    )
    assert out.cache_lengths.tolist() == [4, 6, 3]
    assert out.cache_start_positions.tolist() == [5, 0, 2]
    assert all(key.shape[2] == value.shape[2] == 6 for key, value in out.past_key_values)


@pytest.mark.owner("cache_metadata")
def test_use_cache_false_omits_cache_state(lm):
    model = lm.make_test_model().to(test_device())
    ids, positions = _tokens(2, 6, seed=3), _positions([2, 6], 6)
    uncached = model(ids, positions)
    assert uncached.past_key_values is None
    assert uncached.cache_lengths is None
    assert uncached.cache_start_positions is None
    prefix = model(ids[:, :3], positions[:, :3], use_cache=True)
    consumed = model(
        ids[:, 3:],
        positions[:, 3:],
        past_key_values=prefix.past_key_values,
        cache_lengths=prefix.cache_lengths,
        cache_start_positions=prefix.cache_start_positions,
        use_cache=False,
    )
    assert consumed.past_key_values is None
    assert consumed.cache_lengths is None
    assert consumed.cache_start_positions is None
    assert_close(consumed.logits, uncached.logits[:, 3:], "logits after a consumed cache")


# An input inside what each factory promises: make_test_model() token ids and positions
# 0..15; make_eos_test_model() only its documented greedy transition (the seed's own has
# vocabulary 4 and context 6).
FACTORY_PROBES = {
    "make_test_model": ([list(range(16))], [list(range(16))]),
    "make_eos_test_model": ([[1], [2]], [[0], [0]]),
}


@pytest.mark.owner("test_model_factories")
@pytest.mark.parametrize("factory_name", list(FACTORY_PROBES))
def test_factories_build_identical_fp32_cpu_eval_models(lm, factory_name):
    """Eval mode is a behaviour (docs/contracts.md): the `training` flag is the factory's own
    (the seed's `make_eos_test_model` never calls `.eval()`), so no flag is read here:
    a repeated call on one model, and the same call on a second build, are bit-equal."""
    factory = getattr(lm, factory_name)
    first, second = factory(), factory()
    ids, positions = (torch.tensor(rows) for rows in FACTORY_PROBES[factory_name])
    out_first = first(ids, positions, use_cache=True)
    out_again = first(ids, positions, use_cache=True)
    out_second = second(ids, positions, use_cache=True)
    assert out_first.logits.dtype == torch.float32
    assert out_first.logits.device.type == "cpu"
    assert torch.equal(out_first.logits, out_again.logits), (
        f"{factory_name}(): two calls of one model differ (dropout or other training behaviour)"
    )
    assert torch.equal(out_first.logits, out_second.logits), "two builds must be identical"
    for (key1, value1), (key2, value2) in zip(
        out_first.past_key_values, out_second.past_key_values, strict=True
    ):
        assert torch.equal(key1, key2)
        assert torch.equal(value1, value2)


@pytest.mark.owner("test_model_factories")
def test_test_model_meets_its_floor(lm):
    ids, positions = (torch.tensor(rows) for rows in FACTORY_PROBES["make_test_model"])
    out = lm.make_test_model()(ids, positions, use_cache=True)
    assert out.logits.shape[2] >= 16, "vocabulary >= 16"
    assert len(out.past_key_values) >= 2, ">= 2 layers"
