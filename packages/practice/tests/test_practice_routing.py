"""Routing sends a failure to a drill that owns the invariant: for every owner of
routing.toml, the first drill it names states that invariant in its contract (its section
of packages/drills/README.md, clauses and all), read here as the words the invariant needs.

An owner whose best drill does not state its invariant yet is an expected failure naming
the clause it waits for (strict: it fails once the clause exists, so the mark comes off).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gptlab_testkit import OWNERS

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice")]

ROOT = Path(__file__).resolve().parents[3]
DRILLS_README = ROOT / "packages" / "drills" / "README.md"
# Owners of the grading tools, not of a learner's invariant: no drill repairs them.
TOOL_OWNERS = {"grading", "practice", "package_isolation", "trained_pair"}

# {owner: words (lower case, all required) that state its invariant in a drill's contract}
INVARIANT = {
    "registration": ("register",),
    "config_validation": ("rejection", "% heads"),
    "tying": ("tied",),
    "head_split": ("split", "merge"),
    "mask_polarity": ("true", "may attend"),
    "eval_dropout": ("dropout", "module mode"),
    "loss_shift": ("shift", "ignore_index"),
    "gradients": ("autograd",),
    "tokenwise_cache": ("lengths", "single-token"),
    "rectangular_mask": ("rectangular",),
    "cache_immutability": ("storage", "clone"),
    "cache_validation": ("rejected", "k_cache"),
    "sampler_determinism": ("generator", "multinomial"),
    "greedy_decoding": ("greedy", "argmax"),
    "eos_context": ("eos",),
    "padded_slots": ("lengths", "padding"),
    "position_origins": ("position", "absolute"),
    "cache_metadata": ("cache_lengths", "start"),
    "modern_architecture": ("kv head",),
    "fixed_capacity_storage": ("in place", "position - start"),
    "storage_lifecycle": ("load", "reset"),
    "kv_cache_validation": ("rejected", "before any write"),
    "prefix_key": ("namespace", "prefix"),
    "prefix_lru": ("least recently used",),
    "snapshot_ownership": ("storage", "clone"),
    "prefix_runner": ("prefix", "suffix"),
    "chunked_metadata": ("position",),
    "speculative_rollback": ("rollback",),
    "speculative_accounting": ("budget", "eos"),
    "speculative_sampling": ("multinomial", "probs"),
    "hf_interop": ("split", "merge"),
    "serving_decode": ("lengths", "capacity"),
    "slice_composition": ("lengths", "capacity"),
    "test_model_factories": ("module mode",),
    "decoder_forward": ("softmax", "mask"),
    "llama_interop": ("rotary", "rotate"),
    "speculative_serving": ("in place", "positions"),
    "block_allocator": ("reference count", "free"),
    "block_hash_chain": ("hash", "parent"),
    "paged_prefix_cache": ("block_table", "shared"),
    "copy_on_write": ("shared", "copy on write"),
    "paged_slots": ("block_table", "block_size"),
    "paged_attention": ("block_table", "gather"),
    "paged_kv_validation": ("rejected", "block_table"),
    "speculative_validation": ("rejection", "generator"),
    "chunked_prefill_validation": ("rejected", "lengths"),
    "prefix_cache_validation": ("rejected", "positions"),
    "compiled_decode": ("compile",),
    "batch_budget": ("budget", "decode"),
    "preemption": ("preempt",),
    "block_accounting": ("reference count", "free"),
    "mixed_batch": ("live", "rows"),
    "scheduler_validation": ("rejected", "live"),
    "step_atomicity": ("before any copy", "unchanged"),
    "modern_config": ("rejected", "multiple of"),
    "modern_checkpoint": ("state_dict",),
    "modern_registration": ("register",),
    "modern_rmsnorm": ("rms",),
    "modern_rope": ("rotary",),
    "modern_gqa": ("kv head",),
    "modern_swiglu": ("silu",),
    "modern_attention": ("softmax", "may attend"),
    "modern_decoder": ("softmax", "mask"),
}
# Owners whose best drill does not state the invariant yet: the clause each one waits for.
WAITING = {
    "fixed_capacity_storage": "P20: a cache whose positions start at a non-zero start "
    "(slot = position - start)",
    "storage_lifecycle": "a drill for load and reset of request storage (valid prefix "
    "kept, the rest zeroed, storage objects kept)",
    "loss_shift": "a drill for the shifted cross-entropy (shift, ignore_index=-100)",
    "prefix_lru": "P21 or another drill: entry-level least-recently-used eviction",
    "speculative_rollback": "a drill for rolling a cache back by length (rollback)",
    "speculative_accounting": "a drill for a generation budget and EOS accounting",
    "block_allocator": "a drill for a block pool's free queue and reference counts",
    "block_accounting": "a drill for a block pool's free queue and reference counts",
    "block_hash_chain": "a drill for chained block hashes (parent hash)",
    "copy_on_write": "a drill for copy on write of a shared block",
    "preemption": "a drill for preemption by recomputation",
    "batch_budget": "a drill for one step's token budget, decodes first",
    "eos_context": "a drill clause: finished rows keep emitting EOS until every row has",
    "cache_metadata": "P19 or P20 with cache metadata: lengths advance by T, starts kept",
    "prefix_key": "a drill for the prefix-cache key (namespace, start position, aligned tokens)",
    "prefix_runner": "a drill for running only the uncached suffix after a prefix hit",
}


def sections() -> dict[str, str]:
    """{drill id: its README section, lower case}."""
    text = DRILLS_README.read_text(encoding="utf-8")
    found: dict[str, str] = {}
    for part in re.split(r"^### ", text, flags=re.MULTILINE)[1:]:
        found[part.split()[0]] = part.lower()
    return found


LEARNER_OWNERS = sorted(k for k in OWNERS if k not in TOOL_OWNERS and OWNERS[k].package != "drills")


def test_every_learner_owner_has_an_invariant_to_check() -> None:
    assert set(LEARNER_OWNERS) == set(INVARIANT), set(LEARNER_OWNERS) ^ set(INVARIANT)


@pytest.mark.parametrize(
    "owner",
    [
        pytest.param(
            key,
            marks=pytest.mark.xfail(reason=f"waits for {WAITING[key]}", strict=True)
            if key in WAITING
            else (),
        )
        for key in LEARNER_OWNERS
    ],
)
def test_the_first_drill_of_an_owner_states_its_invariant(owner: str) -> None:
    drills = OWNERS[owner].drills
    assert drills, f"{owner} routes to no drill"
    section = sections()[drills[0]]
    missing = [word for word in INVARIANT[owner] if word not in section]
    assert not missing, f"{owner} -> {drills[0]}: its contract never says {missing}"


def test_a_drill_owner_routes_to_its_own_drill_first() -> None:
    wrong = [k for k, o in OWNERS.items() if o.package == "drills" and o.drills[:1] != (k.upper(),)]
    assert not wrong, wrong
