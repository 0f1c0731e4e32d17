"""The packed route (extension): a model with the serving seam runs a step as one
``[1, N]`` sequence with ragged paged attention; it must give the padded route's
logits and stored K/V, and never let a pool slot outside a row's context reach it."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import candidate, test_device

sched = candidate("SCHEDULER_MODULE")
paged = candidate("PAGED_KV_MODULE")

pytestmark = pytest.mark.extension


class WithoutSeam(torch.nn.Module):
    """The same model behind ``forward`` only: the engine takes the padded route."""

    def __init__(self, model) -> None:
        super().__init__()
        self.inner = model

    def forward(self, *args, **kwargs):
        return self.inner(*args, **kwargs)


def fresh_cache(model, block_size: int = 4):
    g = model.geometry
    sizes = (g.n_layers, g.n_kv_heads, g.head_dim, 24, block_size)
    return paged.PagedKVCache(*sizes, device=test_device())


# Steps of (request id, its next tokens) rows, each continuing the request: fresh
# prompt chunks, a chunk over a cached prefix, decodes beside chunks, a block edge.
STEPS = [
    [("a", [1, 2, 3, 4, 5]), ("b", [6, 7, 8])],
    [("a", [9]), ("b", [10, 11, 12, 13]), ("c", [2, 4])],
    [("a", [5]), ("b", [6]), ("c", [8, 1, 3, 7, 9, 11])],
    [("c", [0]), ("b", [15]), ("a", [14, 13])],
]


def run_steps(model, cache) -> list[torch.Tensor]:
    namespace = paged.PagedNamespace("packed-test", "pool")
    lengths: dict[str, int] = {}
    logits = []
    for step in STEPS:
        for rid, tokens in step:
            if rid not in lengths:
                assert cache.admit(rid, tokens, namespace) == 0  # nothing cached to reuse
                lengths[rid] = 0
        rows = [(tokens, lengths[rid]) for rid, tokens in step]
        logits.append(sched.forward_mixed_batch(model, cache, [rid for rid, _ in step], rows))
        for rid, tokens in step:
            lengths[rid] += len(tokens)
    return logits


@pytest.mark.owner("mixed_batch")
def test_packed_route_gives_the_padded_routes_logits_and_stored_kv(model):
    packed_cache, padded_cache = fresh_cache(model), fresh_cache(model)
    packed = run_steps(model, packed_cache)
    padded = run_steps(WithoutSeam(model), padded_cache)
    for got, want in zip(packed, padded, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    ids = ["a", "b", "c"]
    lengths = [packed_cache.cache_length(r) for r in ids]
    assert lengths == [padded_cache.cache_length(r) for r in ids] == [9, 9, 9]
    got_past, _, _ = packed_cache.model_inputs(ids)
    want_past, _, _ = padded_cache.model_inputs(ids)
    assert got_past is not None and want_past is not None
    for (got_k, got_v), (want_k, want_v) in zip(got_past, want_past, strict=True):
        torch.testing.assert_close(got_k, want_k, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(got_v, want_v, rtol=1e-5, atol=1e-5)


@pytest.mark.owner("mixed_batch")
def test_many_decode_rows_of_different_lengths_attend_apart(model):
    """Ten decode rows in one step, every context length different, beside a chunk:
    the packed route splits them into several length groups, each padded to its own
    longest context, over a pool that starts as NaN; the padded route is the oracle."""
    g = model.geometry
    caches = [
        paged.PagedKVCache(g.n_layers, g.n_kv_heads, g.head_dim, 40, 4, device=test_device())
        for _ in range(2)
    ]
    for cache in caches:
        for key, value in cache.storage:
            key.fill_(float("nan"))
            value.fill_(float("nan"))
    namespace = paged.PagedNamespace("packed-groups", "pool")
    V = g.vocab_size
    prompts = {f"r{i}": [(7 * i + j) % (V - 1) + 1 for j in range(i + 1)] for i in range(10)}
    chunk = ("long", [t % V for t in (11, 12, 13, 14, 15, 16)])
    got = []
    for cache, runner in zip(caches, (model, WithoutSeam(model)), strict=True):
        for rid, prompt in [*prompts.items(), chunk]:
            assert cache.admit(rid, prompt, namespace) == 0
        ids = list(prompts)
        sched.forward_mixed_batch(runner, cache, ids, [(p, 0) for p in prompts.values()])
        decodes = [([len(p) % (V - 1) + 1], len(p)) for p in prompts.values()]
        got.append(
            sched.forward_mixed_batch(runner, cache, [*ids, chunk[0]], [*decodes, (chunk[1], 0)])
        )
    packed, padded = got
    assert packed.shape[0] == 11 and not packed.isnan().any()
    torch.testing.assert_close(packed, padded, rtol=1e-5, atol=1e-5)


@pytest.mark.owner("mixed_batch")
@pytest.mark.parametrize("route", ["packed", "padded"])
def test_stale_pool_slots_never_reach_a_row(model, greedy_alone, route):
    """Every pool slot starts as NaN: a slot read outside some row's context shows."""
    engine = sched.Engine(
        model if route == "packed" else WithoutSeam(model),
        context_length=16,
        num_blocks=12,
        block_size=4,
        max_num_batched_tokens=7,
        max_num_seqs=3,
    )
    for key, value in engine.cache.storage:
        key.fill_(float("nan"))
        value.fill_(float("nan"))
    prompts = {"a": [3, 1, 4, 1, 5], "b": [9, 2, 6], "c": [5, 3, 5, 8, 9, 7, 9]}
    outputs: dict[str, list[int]] = {rid: [] for rid in prompts}
    for rid, prompt in prompts.items():
        engine.add_request(rid, prompt, 16 - len(prompt))
    for _ in range(200):
        if not engine.has_unfinished_requests():
            break
        for rid, token in engine.step().emitted.items():
            outputs[rid].append(token)
    for rid, prompt in prompts.items():
        assert outputs[rid] == greedy_alone(prompt, 16 - len(prompt)), rid


@pytest.mark.owner("scheduler_validation")
@pytest.mark.parametrize("route", ["packed", "padded"])
@pytest.mark.parametrize(
    ("ids", "rows", "named"),
    [
        (["a", "b"], [], "rows"),
        (["a", "b"], [([1, 2], 0)], "request_ids"),
        (["a", "b"], [([1, 2], 0), ([], 0)], r"rows\[1\]"),
    ],
    ids=["no rows", "an id without a row", "the second row empty"],
)
def test_a_malformed_batch_is_rejected_before_anything_changes(model, route, ids, rows, named):
    cache = fresh_cache(model)
    namespace = paged.PagedNamespace("packed-test", "pool")
    for rid in ids:
        cache.admit(rid, [3, 4], namespace)
    runner = model if route == "packed" else WithoutSeam(model)
    with pytest.raises(ValueError, match=named):
        sched.forward_mixed_batch(runner, cache, ids, rows)
    assert [cache.cache_length(rid) for rid in ids] == [0, 0]
    assert cache.stats.used_blocks == 0
