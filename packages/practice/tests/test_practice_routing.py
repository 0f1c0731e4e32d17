"""Routing sends a failure to a drill that owns the invariant, or says that none does.

For every learner-facing owner of routing.toml that names drills, the first one states the
owner's invariant in a numbered, graded clause of its contract (packages/drills/README.md):
CLAIM names that clause and the words (lower case, all required) that state the invariant
there. An owner whose invariant no drill states names none (`drills = []`) and lists
`related` drills instead; grade and practice then send the repair to the mechanism itself.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest

from gptlab_practice.stages import units
from gptlab_practice.store import STORE_NAME, Store
from gptlab_testkit import OWNERS, TestResult
from gptlab_testkit.running.reporting import routing_lines

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice")]

ROOT = Path(__file__).resolve().parents[3]
DRILLS_README = ROOT / "packages" / "drills" / "README.md"
# Owners of the grading tools, not of a learner's invariant: no drill repairs them.
# Owners of tools no learner writes (the argument checks the references share among them).
TOOL_OWNERS = {"grading", "practice", "package_isolation", "trained_pair", "argument_checks"}
Practise = Any  # the conftest's runner: practise(*argv) -> Run(code, out, err)
FakeClock = Any

# {owner: (the clause of its first drill that states the invariant, the words stating it)}
CLAIM = {
    "registration": ("PT06.9", ("is registered", "`layers.<i>.` keys")),
    "config_validation": ("P03.7", ("below 1", "not an int (a bool")),
    "tying": ("PT08.5", ("`head.weight is embedding.weight`", "one parameter")),
    "head_split": ("P03.4", ("is head `c // d`", "split[b, h, t, d] = x[b, t, h*d + d]")),
    "mask_polarity": ("P18.7", ("boolean mask means true = may attend",)),
    "eval_dropout": ("P17.3", ("dropout", "follows the module mode only")),
    "gradients": ("PT06.8", ("backward pass gives every layer parameter a gradient",)),
    "tokenwise_cache": ("P19.4", ("last row of full causal attention",)),
    "rectangular_mask": ("PT17.4", ("key_positions[b, j] <= query_positions[b, i]",)),
    "cache_immutability": ("P19.13", ("the caches", "unchanged", "new memory")),
    "cache_validation": ("P19.11", ("`k_cache` and `v_cache` of different shapes",)),
    "sampler_determinism": ("P11.18", ("equal generator states", "global rng")),
    "greedy_decoding": ("P11.4", ("greedy", "`argmax`")),
    "padded_slots": ("P05.5", ("right padding", "`j < lengths[b]`")),
    "position_origins": ("PT17.4", ("nonzero origins", "key_positions[b, j] <= query_positions")),
    "modern_architecture": ("P04.4", ("repeat_interleave", "never the tiled order")),
    "fixed_capacity_storage": ("P20.4", ("lands in slot `p - start[b]`",)),
    "kv_cache_validation": ("P20.6", ("at/past s in any row", "before any write")),
    "snapshot_ownership": ("P22.9", ("new tensor, never a view", "nothing written there")),
    "chunked_metadata": ("PT17.5", ("a chunk after a cache",)),
    "serving_decode": ("P19.5", ("at or past a row's length", "leaves the output unchanged")),
    "test_model_factories": ("P17.3", ("eval-mode output", "follows the module mode only")),
    "llama_interop": ("P15.4", ("rotate-half", "hugging face llama")),
    "speculative_serving": ("P20.4", ("lands in slot `p - start[b]`",)),
    "paged_slots": ("P21.4", ("block_table[b, p // block_size], p % block_size",)),
    "paged_attention": ("P21.4", ("block_table[b, p // block_size]", "repeated within a row")),
    "paged_kv_validation": ("P21.7", ("past the row's table", "on any row")),
    "speculative_validation": ("P11.16", ("before anything is drawn", "get_state()")),
    "chunked_prefill_validation": ("P05.9", ("`query_length`", "not an int (a bool")),
    "prefix_cache_validation": ("P20.6", ("in any row", "before any write")),
    "compiled_decode": ("P27.5", ("`dynamic=false`", "compiles once per new shape")),
    "mixed_batch": ("P06.4", ("right-padded", "hidden[b, lengths[b] - 1]")),
    "scheduler_validation": ("PT28.7", ("`request_ids`", "repeating an id", "before any")),
    "modern_config": ("P04.7", ("below 1", "not an int (a bool")),
    "modern_checkpoint": ("PT06.5", ("`layers.<i>.` in the state dict", "strict")),
    "modern_registration": ("PT06.4", ("exactly once in `named_parameters()`",)),
    "modern_rmsnorm": ("P14.4", ("eps inside the root",)),
    "modern_rope": ("P15.6", ("each row follows its own positions",)),
    "modern_gqa": ("P04.4", ("`out[:, h] == kv[:, h // group]`", "never the tiled order")),
    "modern_swiglu": ("P16.5", ("silu(gate) * up",)),
    "modern_attention": ("P18.4", ("softmax(q k^t * scale + mask) v", "1/sqrt(d)")),
    "moe_block": ("PT06.4", ("exactly once in `named_parameters()`",)),
    "moe_router": ("P25.4", ("renormalised over those k",)),
    "moe_dispatch": ("P25.8", ("packed in token order", "go back to their tokens' rows")),
    "moe_precision": ("P25.4", ("in fp32 (or wider)",)),
    "runtime_interface": ("PT06.5", ("`layers.<i>.` in the state dict",)),
    "runtime_rows": ("PT17.4", ("key_positions[b, j] <= query_positions[b, i]",)),
    "runtime_loading": ("P16.3", ("rows `0..h-1` the gate",)),
    "runtime_logits": ("P06.4", ("out[b] = hidden[b, lengths[b] - 1]",)),
    "fragment_interface": ("PT06.5", ("`layers.<i>.` in the state dict",)),
    "fragment_decoder": ("P04.4", ("repeat_interleave", "never the tiled order")),
    # M03's advanced branch (cache-aware over M02's model)
    "m03_checkpoint": ("PT06.5", ("`layers.<i>.` in the state dict",)),
    "m03_logits": ("P15.6", ("each row follows its own positions",)),
    "m03_gqa_cache": ("P04.4", ("repeat_interleave", "never the tiled order")),
    "fragment_cache": ("P19.4", ("last row of full causal attention",)),
    "fragment_router": ("P25.4", ("renormalised over those k",)),
    "fragment_boundary": ("P05.9", ("`query_length`", "not an int (a bool")),
    "fragment_inference": ("P17.3", ("follows the module mode only",)),
}
# Owners whose invariant no drill's contract states: they name `related` drills only.
UNOWNED = {
    "loss_shift", "decoder_forward", "hf_interop", "eos_context", "cache_metadata",
    "storage_lifecycle", "slice_composition", "prefix_key", "prefix_lru", "prefix_runner",
    "speculative_rollback", "speculative_accounting", "speculative_sampling", "block_allocator",
    "block_hash_chain", "paged_prefix_cache", "copy_on_write", "batch_budget", "preemption",
    "block_accounting", "step_atomicity", "modern_decoder", "moe_model", "runtime_pipeline",
    "fragment_serving",
}  # fmt: skip
CLAUSE_LINE = re.compile(r"^- \*\*((?:PT|P)\d+)\.(\d+)\*\* \(([^)]*)\) (.*)$", re.MULTILINE)


def graded_clauses() -> dict[str, str]:
    """{clause id: its text, lower case}, the graded clauses of every drill."""
    text = DRILLS_README.read_text(encoding="utf-8")
    return {
        f"{m[1]}.{m[2]}": m[4].lower() for m in CLAUSE_LINE.finditer(text) if m[3] != "not graded"
    }


# A drill's owner, and a Triton kernel's (each routes to itself), is no mechanism's.
LANES = ("drills", "kernels")
LEARNER_OWNERS = sorted(
    k for k in OWNERS if k not in TOOL_OWNERS and OWNERS[k].package not in LANES
)


def test_every_learner_owner_claims_a_clause_or_says_no_drill_owns_it() -> None:
    assert not set(CLAIM) & UNOWNED
    assert set(LEARNER_OWNERS) == set(CLAIM) | UNOWNED, set(LEARNER_OWNERS) ^ (set(CLAIM) | UNOWNED)


@pytest.mark.parametrize("owner", sorted(CLAIM))
def test_the_first_drill_of_an_owner_states_its_invariant_in_a_graded_clause(owner: str) -> None:
    clause, words = CLAIM[owner]
    drills = OWNERS[owner].drills
    assert drills, f"{owner} claims {clause} but routes to no drill"
    assert clause.split(".")[0] == drills[0], f"{owner}: {clause} is not its first drill's"
    text = graded_clauses().get(clause)
    assert text is not None, f"{owner}: {clause} is not a graded clause of {drills[0]}"
    missing = [word for word in words if word not in text]
    assert not missing, f"{owner} -> {clause}: the clause never says {missing}"


@pytest.mark.parametrize("owner", sorted(UNOWNED))
def test_an_owner_no_drill_owns_names_related_drills_only(owner: str) -> None:
    row = OWNERS[owner]
    assert row.drills == (), f"{owner} claims {row.drills}: add its clause to CLAIM"
    assert row.related, f"{owner}: name the drills related to it"


def test_only_an_unowned_invariant_has_related_drills() -> None:
    both = [k for k, o in OWNERS.items() if o.drills and o.related]
    assert not both, f"an owning drill and related ones at once: {both}"


def test_a_drill_owner_routes_to_its_own_drill_first() -> None:
    wrong = [k for k, o in OWNERS.items() if o.package in LANES and o.drills[:1] != (k.upper(),)]
    assert not wrong, wrong


def test_every_drill_a_routing_row_names_can_be_started() -> None:
    """`repair` and a failed check's `start ...` name these: each is a practice item (the
    Triton lane's T01-T08 too, from the kernels' catalogue)."""
    named = {drill for row in OWNERS.values() for drill in (*row.drills, *row.related)}
    triton = {d for d in named if d.startswith("T")}
    assert triton, "no routing row names a Triton kernel"
    if importlib.util.find_spec("gptlab_kernels") is None:  # an install of its own
        named -= triton
    assert named <= set(units()), sorted(named - set(units()))


def test_grade_says_no_drill_owns_an_unowned_invariant_and_names_the_related() -> None:
    failed = TestResult("packages/kv_cache/tests/test_x.py::test_load", "kv_cache",
                        "storage_lifecycle", "contract", (), outcome="failed")  # fmt: skip
    owned = TestResult("packages/kv_cache/tests/test_x.py::test_slot", "kv_cache",
                       "fixed_capacity_storage", "contract", (), outcome="failed")  # fmt: skip
    lines = routing_lines([failed, owned])
    drills = [line.strip() for line in lines if line.strip().startswith("drills:")]
    assert drills[0].startswith("drills: P20 in-place K/V append")
    assert drills[1].startswith(
        "drills: no drill owns this invariant: repair it in kv_cache itself (related drills: P20"
    )
    assert "P01" in drills[1]


def test_repair_says_no_drill_owns_an_unowned_invariant_and_names_the_related(
    practise: Practise, home: Path, clock: FakeClock
) -> None:
    home.mkdir(parents=True)
    with Store(home / STORE_NAME) as store:
        attempt = store.start_attempt("kv_cache", home / "kv_cache_attempt.py", clock(), 20, 3)
        check = store.begin_check(attempt, 1, clock())
        failed = [(1, "failed", 3, 2, "storage_lifecycle", "load kept the padding")]
        store.finish_check(check, failed, 1.0, clock(), {}, None)
    repair = practise("repair")
    assert repair.code != 0
    assert "no drill owns this invariant: repair it in kv_cache stage 1 itself" in repair.err
    assert "(related drills: P20 in-place K/V append" in repair.err
    assert not (home / "p20_attempt.py").exists()  # nothing started


@pytest.mark.parametrize(
    ("owner", "expected"),
    [
        ("storage_lifecycle", "  no drill owns this invariant: repair it in kv_cache stage 2 "
                              "itself (related drills: P20 in-place K/V append"),
        ("fixed_capacity_storage", "  repair in the owning drill, then resume this stage: "
                                   "P20 in-place K/V append"),
    ],
)  # fmt: skip
def test_a_failed_check_names_the_owning_drill_or_says_none_owns_it(
    home: Path, clock: FakeClock, owner: str, expected: str
) -> None:
    from gptlab_practice import messages
    from gptlab_practice.items import item_named
    from gptlab_practice.verdicts import StageVerdict

    failed = TestResult("packages/kv_cache/tests/t.py::test_x", "kv_cache", owner,
                        "contract", (), outcome="failed", reason="why")  # fmt: skip
    verdict = StageVerdict(2, False, 3, [failed], "why")
    said = messages.report(item_named("kv_cache"), verdict, 60.0, ROOT, home)
    assert any(line.startswith(expected) for line in said), said
    assert any("`repair`" in line for line in said) == (owner == "fixed_capacity_storage")
