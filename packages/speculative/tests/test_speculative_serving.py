"""Speculative decoding on the serving cache equals the functional reference.

Extension tests of ``serve_speculative_generate``: target and draft write K/V in
place into ``kv_cache.KVCache`` storage and roll back by length. Oracles: the
target's own greedy ``generate`` (tokens), the reference ``speculative_generate``
(the same decisions, so the same accounting) and the target's functional cache of
the kept tokens (what the storage must hold afterwards). Both cache-aware
variants; drafts: an identical copy, a zero-weight copy, a noisy copy (agrees
often, not always) and the other variant's model (an unrelated draft).
"""

from __future__ import annotations

import copy
import dataclasses
import os

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import speculative
from gptlab_testkit import assert_past_close, candidate, test_device
from gptlab_testkit.kv_storage import data_pointers
from gptlab_testkit.models import cache_aware_modules

MODULES = cache_aware_modules()
# The serving path runs on the references only (see the skip below): both variants
# come from the modules the suite already selects, storage from the kv_cache variable.
reference_lm = MODULES.get("reference")
modern = MODULES.get("modern")
make_reference_model = getattr(reference_lm, "make_test_model", None)
KVCache = candidate("KV_CACHE_MODULE").KVCache
pytestmark = [
    pytest.mark.extension,
    pytest.mark.skipif("candidate" in MODULES, reason="the serving path runs on the references"),
]

PROMPT = [3, 5, 7, 1, 9]
ORIGIN = 2


@pytest.fixture(scope="module", params=list(MODULES), ids=list(MODULES))
def target(request):
    return MODULES[request.param].make_test_model().to(test_device())


def noisy_copy(model, scale=1.0, seed=7):
    """Every weight perturbed by ``scale`` times its tensor's spread: agrees only sometimes."""
    draft = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in draft.parameters():
            noise = torch.randn(parameter.shape, generator=generator).to(parameter.device)
            parameter.add_(scale * parameter.std().nan_to_num(1.0) * noise)
    return draft


def other_variant(model):
    """The other cache-aware variant's test model: same vocabulary, unrelated weights."""
    is_modern = isinstance(model, modern.ModernCacheAwareLM)
    other = make_reference_model() if is_modern else modern.make_test_model()
    return other.to(test_device())


def zeroed_copy(model):
    draft = copy.deepcopy(model)
    with torch.no_grad():
        for parameter in draft.parameters():
            parameter.zero_()
    return draft


DRAFTS = {
    "identical": copy.deepcopy,
    "zeroed": zeroed_copy,
    "noisy": noisy_copy,
    "other-variant": other_variant,
}


def storage_for(model, capacity=32, start=ORIGIN):
    g = model.geometry
    return KVCache(
        g.n_layers, 1, g.n_kv_heads, capacity, g.head_dim,
        dtype=g.dtype, device=g.device, start_positions=[start],
    )  # fmt: skip


def prompt(tokens=PROMPT, origin=ORIGIN):
    ids = torch.tensor([tokens], device=test_device())
    return ids, origin + torch.arange(len(tokens), device=test_device())[None, :]


def accounting(out):
    return (
        out.verification_steps,
        out.proposed_tokens,
        out.accepted_draft_tokens,
        out.discarded_draft_tokens,
    )


def run_both(target, draft, ids, positions, budget, width, eos=None):
    """(serving output, reference output, target storage, draft storage)."""
    origin = int(positions[0, 0])
    target_storage = storage_for(target, start=origin)
    draft_storage = storage_for(draft, start=origin)
    served = speculative.serve_speculative_generate(
        target, draft, ids, positions, budget, width, target_storage, draft_storage, eos
    )
    reference = speculative.speculative_generate(target, draft, ids, positions, budget, width, eos)
    return served, reference, target_storage, draft_storage


@pytest.mark.owner("speculative_serving")
@pytest.mark.parametrize("draft_name", list(DRAFTS))
@pytest.mark.parametrize("width", [1, 3, 5])
def test_tokens_and_accounting_equal_the_reference_for_every_draft(target, draft_name, width):
    draft = DRAFTS[draft_name](target)
    ids, positions = prompt()
    served, reference, _, _ = run_both(target, draft, ids, positions, 14, width)
    with torch.no_grad():
        expected = target.generate(ids, positions, 14)
    assert torch.equal(served.tokens, expected)
    assert accounting(served) == accounting(reference)


@pytest.mark.owner("speculative_serving")
def test_the_drafts_exercise_both_acceptance_and_rollback(target):
    """Guards the test above: the noisy draft is partly right, so rollbacks happen mid-round."""
    ids, positions = prompt()
    served, _, _, _ = run_both(target, noisy_copy(target), ids, positions, 14, 3)
    assert 0 < served.accepted_draft_tokens < served.proposed_tokens


@pytest.mark.owner("speculative_serving")
@pytest.mark.parametrize("width", [1, 2, 4])
def test_eos_and_budget_match_the_reference(width):
    for module in MODULES.values():
        target = module.make_eos_test_model().to(test_device())
        ids, positions = prompt([1], origin=0)
        for draft in (copy.deepcopy(target), zeroed_copy(target)):
            served, reference, _, _ = run_both(target, draft, ids, positions, 8, width, eos=0)
            assert torch.equal(served.tokens, reference.tokens)
            assert accounting(served) == accounting(reference)


@pytest.mark.owner("speculative_serving")
def test_storage_holds_the_kept_tokens_in_place_and_counts_them(target):
    draft = noisy_copy(target)
    ids, positions = prompt()
    target_storage, draft_storage = storage_for(target), storage_for(draft)
    pointers = (data_pointers(target_storage.storage), data_pointers(draft_storage.storage))
    served = speculative.serve_speculative_generate(
        target, draft, ids, positions, 10, 3, target_storage, draft_storage
    )
    assert pointers == (data_pointers(target_storage.storage), data_pointers(draft_storage.storage))
    # The target keeps every token but the last (never fed, as in generate).
    kept = served.tokens[:, :-1]
    kept_positions = ORIGIN + torch.arange(kept.shape[1], device=kept.device)[None]
    assert target_storage.cache_lengths.tolist() == [kept.shape[1]]
    with torch.no_grad():
        oracle = target(kept, kept_positions, use_cache=True).past_key_values
    assert_past_close(target_storage.snapshot(), oracle)
    # The draft keeps a prefix of the output, and its K/V are the draft's own.
    draft_kept = int(draft_storage.cache_lengths[0])
    assert len(PROMPT) <= draft_kept <= kept.shape[1]
    with torch.no_grad():
        draft_oracle = draft(
            kept[:, :draft_kept], kept_positions[:, :draft_kept], use_cache=True
        ).past_key_values
    assert_past_close(draft_storage.snapshot(), draft_oracle)


@pytest.mark.owner("speculative_serving")
def test_continues_a_prefix_already_in_storage(target):
    """Storage holding a cached prefix: the request continues it, as full decoding would."""
    draft = noisy_copy(target)
    prefix, rest = [4, 4, 2], PROMPT
    target_storage, draft_storage = storage_for(target), storage_for(draft)
    prefix_ids, prefix_positions = prompt(prefix)
    with torch.no_grad():
        for model, storage in ((target, target_storage), (draft, draft_storage)):
            storage.append(model(prefix_ids, prefix_positions, use_cache=True).past_key_values,
                           prefix_positions)  # fmt: skip
        ids, positions = prompt(rest, origin=ORIGIN + len(prefix))
        full_ids, full_positions = prompt(prefix + rest)
        expected = target.generate(full_ids, full_positions, 9)[:, len(prefix) :]
    served = speculative.serve_speculative_generate(
        target, draft, ids, positions, 9, 2, target_storage, draft_storage
    )
    assert torch.equal(served.tokens, expected)


@pytest.mark.owner("speculative_serving")
@settings(max_examples=12, deadline=None, derandomize=True)
@given(
    tokens=st.lists(st.integers(0, 15), min_size=1, max_size=6),
    budget=st.integers(0, 12),
    width=st.integers(1, 6),
    modern_target=st.booleans(),
)
def test_any_request_gives_the_targets_greedy_tokens(tokens, budget, width, modern_target):
    target = (modern.make_test_model() if modern_target else make_reference_model()).to(
        test_device()
    )
    ids, positions = prompt(tokens, origin=1)
    served, reference, _, _ = run_both(target, noisy_copy(target), ids, positions, budget, width)
    assert torch.equal(served.tokens, reference.tokens)
    assert accounting(served) == accounting(reference)


# ---- validation: one malformed argument, nothing written ---------------------------------


def _untouched(storage):
    return storage.cache_lengths.tolist() == [0] and all(
        not key.any() and not value.any() for key, value in storage.storage
    )


@pytest.mark.owner("speculative_serving")
@pytest.mark.parametrize(
    ("case", "match"),
    [
        ("batch two", "batch size 1"),
        ("capacity", "capacity"),
        ("heads", "target_storage"),
        ("positions", "continue"),
        ("width", "num_speculative_tokens"),
        ("vocabulary", "vocabularies"),
    ],
)
def test_a_malformed_request_is_rejected_before_any_write(target, case, match):
    ids, positions = prompt()
    draft = copy.deepcopy(target)
    target_storage, draft_storage = storage_for(target), storage_for(draft)
    width = 3
    if case == "batch two":
        ids, positions = ids.repeat(2, 1), positions.repeat(2, 1)
    elif case == "capacity":
        target_storage = storage_for(target, capacity=len(PROMPT) + 9)  # one slot short of 10
    elif case == "heads":
        g = target.geometry
        target_storage = KVCache(g.n_layers, 1, g.n_kv_heads + 1, 32, g.head_dim,
                                 start_positions=[ORIGIN])  # fmt: skip
    elif case == "positions":
        positions = positions + 1
    elif case == "width":
        width = 0
    elif case == "vocabulary":
        wider = dataclass_replace_vocab(target)
        draft, draft_storage = wider, storage_for(wider)
    with pytest.raises(ValueError, match=match):
        speculative.serve_speculative_generate(
            target, draft, ids, positions, 10, width, target_storage, draft_storage
        )
    assert _untouched(target_storage) and _untouched(draft_storage)


def dataclass_replace_vocab(model):
    """The same architecture with one more vocabulary entry (a draft of another tokenizer)."""
    config = dataclasses.replace(model.config, vocab_size=model.config.vocab_size + 1)
    return type(model)(config).to(test_device()).eval()


@pytest.mark.owner("speculative_serving")
def test_draft_needs_one_slot_less_than_the_target(target):
    """The draft is never fed the last token: T + n - 1 slots suffice, T + n - 2 do not."""
    ids, positions = prompt()
    draft = copy.deepcopy(target)
    budget = 6
    speculative.serve_speculative_generate(
        target, draft, ids, positions, budget, 2,
        storage_for(target), storage_for(draft, capacity=len(PROMPT) + budget - 1),
    )  # fmt: skip
    with pytest.raises(ValueError, match="draft_storage"):
        speculative.serve_speculative_generate(
            target, draft, ids, positions, budget, 2,
            storage_for(target), storage_for(draft, capacity=len(PROMPT) + budget - 2),
        )  # fmt: skip


@pytest.mark.owner("speculative_serving")
def test_round_callback_streams_exactly_the_emitted_tokens(target):
    ids, positions = prompt()
    draft = noisy_copy(target)
    rounds = []
    served = speculative.serve_speculative_generate(
        target, draft, ids, positions, 14, 3, storage_for(target), storage_for(draft),
        on_round=lambda accepted, own, replaced: rounds.append((accepted, own, replaced)),
    )  # fmt: skip
    streamed = [
        t for accepted, own, _ in rounds for t in [*accepted, *([] if own is None else [own])]
    ]
    assert streamed == served.tokens[0, len(PROMPT) :].tolist()
    assert len(rounds) == served.verification_steps
    assert sum(len(accepted) for accepted, _, _ in rounds) == served.accepted_draft_tokens
    assert any(replaced for _, _, replaced in rounds)


@pytest.mark.owner("speculative_serving")
@pytest.mark.parametrize(
    "row",
    [[2, 9, 4, 5, 6], [2**63 - 3, 2**63 - 2, 2**63 - 1, -(2**63), -(2**63) + 1]],
    ids=["gap-in-a-middle-column", "int64-wraparound"],
)
def test_every_position_column_is_checked_before_any_write(target, row):
    draft = copy.deepcopy(target)
    target_storage, draft_storage = storage_for(target), storage_for(draft)
    ids, _ = prompt()
    positions = torch.tensor([row], device=test_device())
    with pytest.raises(ValueError, match="positions"):
        speculative.serve_speculative_generate(
            target, draft, ids, positions, 3, 2, target_storage, draft_storage
        )
    assert _untouched(target_storage) and _untouched(draft_storage)


# ---- the compiled path: two static graphs a round (speculative.compiled) ------------------

COMPILED = os.environ.get("GPTLAB_COMPILED_TESTS") == "1"
COMPILE_MODE = os.environ.get("GPTLAB_COMPILE_MODE", "default")
compiled_or_skip = pytest.mark.skipif(not COMPILED, reason="compiled: run by `nox -s compiled`")


def compiled_decoder(target, draft, width, compiled, capacity=24):
    from speculative.compiled import CompiledSpeculativeDecoder

    return CompiledSpeculativeDecoder(
        target, draft, capacity, width, compile=compiled, mode=COMPILE_MODE
    )


@pytest.mark.owner("speculative_serving")
@pytest.mark.parametrize("draft_name", list(DRAFTS))
@pytest.mark.parametrize("width", [1, 3, 5])
def test_static_rounds_equal_the_reference_for_every_draft(target, draft_name, width):
    """The compiled path's own reference: the same static calls, eager."""
    draft = DRAFTS[draft_name](target)
    ids, positions = prompt()
    decoder = compiled_decoder(target, draft, width, compiled=False)
    out = decoder.generate(ids, positions, 12)
    reference = speculative.speculative_generate(target, draft, ids, positions, 12, width)
    assert torch.equal(out.tokens, reference.tokens)
    assert accounting(out) == accounting(reference)


@pytest.mark.owner("speculative_serving")
@pytest.mark.parametrize("width", [1, 2, 4])
def test_static_rounds_follow_the_eos_and_budget_rules(width):
    for module in MODULES.values():
        target = module.make_eos_test_model().to(test_device())
        ids, positions = prompt([1], origin=0)
        for draft in (copy.deepcopy(target), zeroed_copy(target)):
            decoder = compiled_decoder(target, draft, width, compiled=False, capacity=16)
            out = decoder.generate(ids, positions, 8, 0)
            reference = speculative.speculative_generate(target, draft, ids, positions, 8, width, 0)
            assert torch.equal(out.tokens, reference.tokens)
            assert accounting(out) == accounting(reference)


@pytest.mark.owner("speculative_serving")
def test_static_rounds_reject_a_request_past_the_headroom(target):
    ids, positions = prompt()  # 5 tokens; 5 + 16 + 4 - 1 = 24 slots fit, 25 do not
    decoder = compiled_decoder(target, noisy_copy(target), 4, compiled=False)
    decoder.generate(ids, positions, 16)
    with pytest.raises(ValueError, match="capacity"):
        decoder.generate(ids, positions, 17)


@compiled_or_skip
@pytest.mark.owner("speculative_serving")
def test_compiled_rounds_equal_the_reference(target):
    if not isinstance(target, modern.ModernCacheAwareLM):
        pytest.skip("compiled once, on the Llama-shaped variant (the benchmark's): bounded time")
    draft = noisy_copy(target)
    ids, positions = prompt()
    decoder = compiled_decoder(target, draft, 3, compiled=True)
    for budget in (12, 7):  # a second request reuses the graphs over stale slots
        out = decoder.generate(ids, positions, budget)
        reference = speculative.speculative_generate(target, draft, ids, positions, budget, 3)
        assert torch.equal(out.tokens, reference.tokens)
        assert accounting(out) == accounting(reference)
