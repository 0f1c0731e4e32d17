"""Extension: sizes, devices, request ids and paged forward calls refused before anything changes.

This project's rules beyond README's contract (owner ``paged_kv_validation``):

- a pool whose bytes the device cannot hold is a ValueError naming the sizes and
  the bytes, raised at once (no loop over 2**40 layers or blocks, no allocator
  message); ``device`` must name a device that exists here and holds data (not
  ``meta``);
- request ids are a str or an int (not a bool), or a tuple of them: a float, None,
  a list or a bool is refused, as ``admit``'s id and as ``fork``'s child id;
- ``paged_forward`` / ``paged_forward_fast`` check the model, the cache's geometry
  against the model's (layer count, K/V heads, head size, dtype) and the tokens'
  kind before reserving anything, and a model call that fails after writing K/V
  leaves every table, length, count and counter as it was.

Each case is valid in every respect but one; the request a call is about is the
second open one where the call takes several.
"""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_rejects, candidate, test_device
from gptlab_testkit.boundary import assert_rejected_unchanged
from gptlab_testkit.models import cache_aware_modules

pkv = candidate("PAGED_KV_MODULE")

pytestmark = [pytest.mark.owner("paged_kv_validation"), pytest.mark.extension]

DEVICE = test_device()
GOOD = {"layer_count": 2, "head_count": 2, "head_dim": 3, "num_blocks": 8, "block_size": 4}
NS = pkv.PagedNamespace("m", "c")


@pytest.mark.parametrize("name", list(GOOD))
@pytest.mark.parametrize("value", [2**40, 2**62], ids=["2**40", "2**62"])
def test_a_pool_that_cannot_be_allocated_is_refused_at_once(name, value):
    error = assert_rejects(
        lambda: pkv.PagedKVCache(**{**GOOD, name: value}, device=DEVICE), ValueError, name
    )
    assert "bytes" in str(error) and "enforce fail" not in str(error)


@pytest.mark.parametrize("device", ["meta", "no-such-device", "cuda:99", 3, None], ids=repr)
def test_a_device_that_cannot_hold_the_pool_is_named(device):
    assert_rejects(lambda: pkv.PagedKVCache(**GOOD, device=device), ValueError, "device")


def test_a_device_given_as_a_name_or_an_object_is_accepted():
    for device in (DEVICE, torch.device(DEVICE)):
        cache = pkv.PagedKVCache(**GOOD, device=device)
        assert cache.storage[0][0].device == torch.device(DEVICE)


BAD_IDS = [1.5, None, True, [1], (1.5,), (), b"a"]


@pytest.fixture
def open_two():
    cache = pkv.PagedKVCache(**GOOD, device=DEVICE)
    cache.admit("a", [1, 2, 3], NS)
    cache.admit(("gen", 0, 1), [4, 5], NS)  # a tuple of ints and strs is an id too
    return cache


@pytest.mark.parametrize("bad", BAD_IDS, ids=repr)
def test_admit_refuses_an_id_of_another_kind(open_two, bad):
    assert_rejected_unchanged(
        open_two, lambda: open_two.admit(bad, [1, 2], NS), ValueError, "request_id"
    )


@pytest.mark.parametrize("bad", BAD_IDS, ids=repr)
def test_fork_refuses_a_child_id_of_another_kind(open_two, bad):
    assert_rejected_unchanged(
        open_two, lambda: open_two.fork(("gen", 0, 1), bad), ValueError, "child_id"
    )


def test_ids_of_the_documented_kinds_are_accepted(open_two):
    open_two.fork(("gen", 0, 1), 7)
    assert open_two.block_table(7) == open_two.block_table(("gen", 0, 1))


# ---- paged forward calls -------------------------------------------------------------


def model_of(module_id: str):
    return cache_aware_modules()[module_id].make_test_model().to(DEVICE)


@pytest.fixture(params=list(cache_aware_modules()))
def model(request):
    return model_of(request.param)


def cache_for(model, **change):
    g = model.geometry
    sizes = {
        "layer_count": g.n_layers,
        "head_count": g.n_kv_heads,
        "head_dim": g.head_dim,
        "num_blocks": 8,
        "block_size": 4,
        **change,
    }
    dtype = sizes.pop("dtype", torch.float32)
    cache = pkv.PagedKVCache(**sizes, dtype=dtype, device=DEVICE)
    cache.admit("a", [1, 2], NS)
    cache.admit("b", [3], NS)
    return cache


def visible_state(cache) -> tuple:
    """What a reader of the cache sees: counters, tables, lengths, reference counts."""
    s = cache.stats
    counters = (s.hits, s.misses, s.evictions, s.cached_blocks, s.used_blocks, s.free_blocks)
    tables = {rid: (cache.block_table(rid), cache.cache_length(rid)) for rid in ("a", "b")}
    return counters, tables, [cache.ref_count(block) for block in range(cache.num_blocks)]


def long(rows):
    return torch.tensor(rows, dtype=torch.long, device=DEVICE)


FORWARDS = ["paged_forward", "paged_forward_fast"]


@pytest.mark.parametrize("forward", FORWARDS)
@pytest.mark.parametrize(
    "change",
    [{"layer_count": 1}, {"layer_count": 3}, {"head_count": 3}, {"head_dim": 5},
     {"dtype": torch.float64}],
    ids=["fewer layers", "more layers", "other K/V heads", "other head size", "float64"],
)  # fmt: skip
def test_a_cache_of_another_geometry_is_refused_before_reserving(model, forward, change):
    cache = cache_for(model, **change)
    before = visible_state(cache)
    call = getattr(pkv, forward)
    assert_rejects(
        lambda: call(model, cache, ["a", "b"], long([[5], [6]]), long([[0], [0]])),
        ValueError,
        "cache",
    )
    assert visible_state(cache) == before


@pytest.mark.parametrize("forward", FORWARDS)
@pytest.mark.parametrize(
    ("input_ids", "positions", "named"),
    [
        (lambda: long([[5], [6]]).int(), lambda: long([[0], [0]]), "input_ids"),
        (lambda: long([[5], [6]]).float(), lambda: long([[0], [0]]), "input_ids"),
        (lambda: long([[5]]), lambda: long([[0]]), "input_ids"),
        (lambda: long([[5], [6]]), lambda: long([[0], [0]]).int(), "positions"),
        (lambda: long([[5], [6]]), lambda: long([[0, 1], [0, 1]]), "positions"),
        (lambda: long([[5], [10**6]]), lambda: long([[0], [0]]), "input_ids"),
        (lambda: [[5], [6]], lambda: long([[0], [0]]), "input_ids"),
    ],
    ids=["int32 ids", "float ids", "one row for two ids", "int32 positions",
         "positions of another shape", "an id past the vocabulary", "a list of ids"],
)  # fmt: skip
def test_tokens_of_the_wrong_kind_are_refused_before_reserving(
    model, forward, input_ids, positions, named
):
    cache = cache_for(model)
    before = visible_state(cache)
    call = getattr(pkv, forward)
    assert_rejects(lambda: call(model, cache, ["a", "b"], input_ids(), positions()), ValueError,
                   named)  # fmt: skip
    assert visible_state(cache) == before


@pytest.mark.parametrize("forward", FORWARDS)
def test_something_that_is_not_a_model_is_refused(model, forward):
    cache = cache_for(model)
    before = visible_state(cache)
    call = getattr(pkv, forward)
    for bad in (None, "model", torch.zeros(2)):
        assert_rejects(
            lambda bad=bad: call(bad, cache, ["a", "b"], long([[5], [6]]), long([[0], [0]])),
            (ValueError, TypeError),
            "model",
        )
    assert visible_state(cache) == before


class FailsAfterWriting(torch.nn.Module):
    """The serving seam, raising once ``run_blocks`` has written the new K/V."""

    def __init__(self, model) -> None:
        super().__init__()
        self.inner = model

    @property
    def geometry(self):
        return self.inner.geometry

    @property
    def lm_head(self):
        return self.inner.lm_head

    def forward(self, *args, **kwargs):
        return self.inner(*args, **kwargs)

    def run_blocks(self, *args, **kwargs):
        self.inner.run_blocks(*args, **kwargs)
        raise RuntimeError("injected after the write")


def test_a_fast_call_that_fails_after_writing_changes_nothing_a_reader_sees(model):
    cache = cache_for(model)
    pkv.paged_forward_fast(model, cache, ["a"], long([[1, 2]]), long([[0, 1]]))
    # "c" shares a's partial block: its write copies that block first (copy on write).
    cache.fork("a", "c")
    before = visible_state(cache), cache.block_table("c"), cache.stats.bytes_held
    with pytest.raises(RuntimeError, match="injected"):
        pkv.paged_forward_fast(
            FailsAfterWriting(model), cache, ["b", "c"], long([[5, 6, 7, 8]] * 2),
            long([[0, 1, 2, 3], [2, 3, 4, 5]]),
        )  # fmt: skip
    assert (visible_state(cache), cache.block_table("c"), cache.stats.bytes_held) == before
    want = pkv.paged_forward(model, cache_copy(model), ["c"], long([[5]]), long([[2]]))
    got = pkv.paged_forward_fast(model, cache, ["c"], long([[5]]), long([[2]]))
    torch.testing.assert_close(got, want)


def cache_copy(model):
    """The same requests, computed without any failure (the oracle of the retry)."""
    cache = cache_for(model)
    pkv.paged_forward(model, cache, ["a"], long([[1, 2]]), long([[0, 1]]))
    cache.fork("a", "c")
    return cache
