"""The fast path (attention over the pool in place) against the gathered reference path.

This project's extension: the contract grades the gathered path; the fast path
needs the reference model's `run_blocks` seam.
"""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, candidate, test_device
from gptlab_testkit.models import cache_aware_modules

pkv = candidate("PAGED_KV_MODULE")
MODULES = cache_aware_modules()

pytestmark = [pytest.mark.owner("paged_attention"), pytest.mark.extension]

SHARED = [3, 1, 4, 1, 5, 9, 2, 6]
REQUESTS = {"a": (0, [*SHARED, 5, 3]), "b": (0, [*SHARED, 8, 9, 7]), "c": (3, [2, 7, 1, 8, 2])}


@pytest.fixture(scope="module", params=list(MODULES), ids=list(MODULES))
def model(request):
    module = MODULES[request.param]
    if not hasattr(pkv, "paged_forward_fast") or not hasattr(
        module.make_test_model(), "run_blocks"
    ):
        pytest.skip("the fast path needs paged_kv's reference and a model with run_blocks")
    return module.make_test_model().to(test_device())


def long(rows: list[list[int]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long, device=test_device())


def serve(model, forward):
    """Prefill a and c, then b with a prefix hit, a fork of b, then three batched decodes."""
    with torch.no_grad():
        probe = model(long([[0]]), long([[0]]), use_cache=True).past_key_values
    cache = pkv.PagedKVCache(
        len(probe), probe[0][0].shape[1], probe[0][0].shape[3], 12, 4, device=test_device()
    )
    namespace = pkv.PagedNamespace("fast", "path")
    logits, tokens = [], {}
    for rid in ("a", "c", "b"):
        start, prompt = REQUESTS[rid]
        reused = cache.admit(rid, prompt, namespace, start)
        rest = prompt[reused:]
        first = start + reused
        logits.append(
            forward(
                model, cache, [rid], long([rest]), long([list(range(first, first + len(rest)))])
            )
        )
        tokens[rid] = (start, list(prompt))
    cache.fork("b", "b2")
    tokens["b2"] = (tokens["b"][0], list(tokens["b"][1]))
    rids = ["a", "b", "b2", "c"]
    for step in range(3):
        nxt = [[(step + i) % 16] for i in range(len(rids))]
        pos = [[tokens[r][0] + len(tokens[r][1])] for r in rids]
        logits.append(forward(model, cache, rids, long(nxt), long(pos)))
        for r, token in zip(rids, nxt, strict=True):
            tokens[r][1].append(token[0])
    return logits, cache, tokens


def test_fast_path_logits_and_pool_equal_the_gathered_path(model):
    fast, fast_cache, tokens = serve(model, pkv.paged_forward_fast)
    slow, slow_cache, _ = serve(model, pkv.paged_forward)

    for index, (got, want) in enumerate(zip(fast, slow, strict=True)):
        assert_close(got, want, f"call {index} logits")
    for rid in tokens:
        assert fast_cache.block_table(rid) == slow_cache.block_table(rid)
    for (key, value), (want_key, want_value) in zip(
        fast_cache.storage, slow_cache.storage, strict=True
    ):
        assert_close(key, want_key, "pool keys")
        assert_close(value, want_value, "pool values")


def test_fast_path_decode_logits_equal_full_recomputation(model):
    fast, _, tokens = serve(model, pkv.paged_forward_fast)

    for row, rid in enumerate(["a", "b", "b2", "c"]):
        start, sequence = tokens[rid]
        with torch.no_grad():
            full = model(long([sequence]), long([list(range(start, start + len(sequence)))])).logits
        for step in range(3):
            index = len(sequence) - 3 + step
            assert_close(fast[3 + step][row, 0], full[0, index], f"{rid} decode step {step}")
