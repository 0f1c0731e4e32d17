"""Attention over blocks: logits through a shared pool equal full recomputation.

Requests run through a cache-aware model against ``model_inputs`` (the rows'
blocks gathered) and store their new K/V with ``append``, in any interleaving:
chunks of any size, several requests in one call, prefix hits, forks. Each row's
logits must equal one uncached forward over that request's whole sequence.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from gptlab_testkit import ATOL, RTOL, assert_close, candidate, test_device
from gptlab_testkit.kv_storage import new_token_kv
from gptlab_testkit.models import cache_aware_modules

pkv = candidate("PAGED_KV_MODULE")
MODULES = cache_aware_modules()

pytestmark = [pytest.mark.owner("paged_attention"), pytest.mark.contract]

SHARED = [3, 1, 4, 1, 5, 9, 2, 6]  # two blocks of four
PROMPTS = {"a": (0, [*SHARED, 5, 3]), "b": (0, [*SHARED, 8, 9, 7]), "c": (2, [*SHARED, 1])}


@pytest.fixture(scope="module", params=list(MODULES), ids=list(MODULES))
def model(request):
    return MODULES[request.param].make_test_model().to(test_device())


def long(rows: list[list[int]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long, device=test_device())


def new_cache(model, num_blocks: int = 16, block_size: int = 4):
    """A pool shaped like the model's cache (read from one cached forward)."""
    with torch.no_grad():
        probe = model(long([[0]]), long([[0]]), use_cache=True).past_key_values
    _, heads, _, head_dim = probe[0][0].shape
    return pkv.PagedKVCache(
        len(probe), heads, head_dim, num_blocks, block_size, device=test_device()
    )


class Served:
    """Requests served through one pool; remembers every row's tokens for the oracle."""

    def __init__(self, model) -> None:
        self.model = model
        self.cache = new_cache(model)
        self.tokens: dict[str, list[int]] = {}
        self.starts: dict[str, int] = {}
        self.namespace = pkv.PagedNamespace("test-model", "parity")

    def admit(self, rid: str, start: int, prompt: list[int]) -> int:
        reused = self.cache.admit(rid, prompt, self.namespace, start)
        self.tokens[rid], self.starts[rid] = list(prompt[:reused]), start
        return reused

    def step(self, rows: dict[str, list[int]]) -> None:
        """One model call over these rows' next tokens; checks their logits."""
        ids = list(rows)
        T = len(rows[ids[0]])
        first = [self.starts[r] + len(self.tokens[r]) for r in ids]
        positions = long([list(range(f, f + T)) for f in first])
        input_ids = long([rows[r] for r in ids])
        past, lengths, starts = self.cache.model_inputs(ids)
        with torch.no_grad():
            out = self.model(input_ids, positions, past, lengths, starts, use_cache=True)
        old = [len(self.tokens[r]) for r in ids]
        self.cache.append(ids, input_ids, positions, new_token_kv(out.past_key_values, old, T))
        for row, rid in enumerate(ids):
            self.tokens[rid].extend(rows[rid])
            got, want = out.logits[row], self.oracle(rid)[0, old[row] :]
            if not torch.allclose(got, want, atol=ATOL, rtol=RTOL):  # the cheap check first
                assert_close(got, want, f"{rid} logits")

    def oracle(self, rid: str) -> torch.Tensor:
        tokens, start = self.tokens[rid], self.starts[rid]
        with torch.no_grad():
            return self.model(
                long([tokens]), long([list(range(start, start + len(tokens)))])
            ).logits


def test_second_request_reuses_the_shared_prefix_and_matches_full_recomputation(model):
    served = Served(model)
    served.admit("a", *PROMPTS["a"])
    served.step({"a": PROMPTS["a"][1]})

    reused = served.admit("b", *PROMPTS["b"])
    served.step({"b": PROMPTS["b"][1][reused:]})

    assert reused == 8
    assert served.cache.block_table("b")[:2] == served.cache.block_table("a")[:2]


def test_batched_decode_of_rows_with_other_lengths_and_starts_matches(model):
    served = Served(model)
    for rid in ("a", "c"):
        start, prompt = PROMPTS[rid]
        served.admit(rid, start, prompt)
        served.step({rid: prompt})
    served.admit("b", *PROMPTS["b"])
    served.step({"b": PROMPTS["b"][1][8:]})

    for token in (7, 2):
        served.step({"a": [token], "b": [token + 1], "c": [token + 2]})


def test_forked_requests_diverge_without_touching_each_other(model):
    served = Served(model)
    served.admit("a", *PROMPTS["a"])
    served.step({"a": PROMPTS["a"][1]})
    served.cache.fork("a", "fork")
    served.tokens["fork"], served.starts["fork"] = list(served.tokens["a"]), 0

    served.step({"a": [11], "fork": [12]})
    served.step({"fork": [13, 14]})
    served.step({"a": [15]})


# No shrinking: a broken candidate is reported at once (the known-bad ladder grades many).
@settings(max_examples=6, deadline=None, phases=(Phase.explicit, Phase.reuse, Phase.generate))
@given(data=st.data())
def test_any_interleaving_of_requests_sharing_the_pool_matches_full_recomputation(model, data):
    served = Served(model)
    remaining: dict[str, list[int]] = {}
    live: list[str] = []
    order = data.draw(st.permutations(list(PROMPTS)), label="admission order")
    pending = list(order)
    while pending or any(remaining.values()):
        choices = [r for r in live if remaining[r]]
        if pending and (not choices or data.draw(st.booleans(), label="admit next")):
            rid = pending.pop(0)
            start, prompt = PROMPTS[rid]
            reused = served.admit(rid, start, prompt)
            remaining[rid] = [*prompt[reused:], 0, 6]  # the rest, then two "decoded" tokens
            live.append(rid)
            continue
        group = data.draw(
            st.lists(st.sampled_from(choices), min_size=1, max_size=len(choices), unique=True),
            label="rows of one call",
        )
        size = data.draw(
            st.integers(1, min(len(remaining[r]) for r in group)), label="tokens per row"
        )
        served.step({r: remaining[r][:size] for r in group})
        for r in group:
            remaining[r] = remaining[r][size:]
