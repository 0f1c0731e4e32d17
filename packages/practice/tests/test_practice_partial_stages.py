"""Stages a learner can follow: for every stage of the eight mechanisms, an attempt that
builds exactly what that stage and the earlier ones build passes the stage's check.

A partial attempt is a faithful candidate with what later stages build taken out: the
graded methods a later stage adds raise NotImplementedError, and tinygpt before stage 5
embeds positions from 0 and masks with an upper-left triangle (what a learner has before
the rectangular-mask stage). Where a stage adds no method of its own (chunked_prefill,
speculative, scheduler, modern_lm: one function, one `step` or one model that grows)
the candidate is whole.

Cost: one grader run per stage (39), 1-8 s each at load 7 on the shared 2-core machine,
about 100 s in all: the slowest file of the suite (`-m "not slow"` leaves it out).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gptlab_practice.grader import attempt_filename, identity, run_stage
from gptlab_practice.stages import mechanisms

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice"), pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
FAITHFUL = ROOT / "integration_tests" / "faithful"
CANDIDATES = {
    "tinygpt": "good_tinygpt_manual_softmax.py",
    "cache_aware_lm": "good_cache_aware_lm_manual_softmax.py",
    "kv_cache": "good_kv_cache_index_copy.py",
    "prefix_cache": "good_prefix_cache_dict_recency.py",
    "chunked_prefill": "good_chunked_prefill_balanced.py",
    "speculative": "good_speculative_gptfast.py",
    "paged_kv": "good_paged_kv_tuple_chain.py",
    "scheduler": "good_scheduler_flat_slots.py",
    "modern_lm": "good_modern_lm_fused_gate_up.py",
}
# {mechanism: {stage that builds it: the graded methods it adds}}; before that stage each
# raises NotImplementedError.
LATER = {
    "cache_aware_lm": {6: ["Faithful.generate"]},
    "kv_cache": {
        2: [
            "KVCache.__init__",
            "KVCache.append",
            "KVCache.storage",
            "KVCache.cache_lengths",
            "KVCache.cache_start_positions",
            "KVCache.logical_length",
        ],
        3: ["KVCache.load", "KVCache.model_inputs", "KVCache.snapshot", "KVCache.reset"],
        4: ["KVCache.from_past_key_values"],
    },
    # lookup_longest exists from stage 1 (its tests look entries up); stage 2 makes it
    # search downward with recency
    "prefix_cache": {2: ["PrefixCache.clear"], 3: ["PrefixCachedRunner.prefill"]},
    # fork is the allocator's (stage 1); model_inputs reads slots back (stage 2)
    "paged_kv": {2: ["PagedKVCache.slot_mapping", "PagedKVCache.model_inputs"]},
}
TINYGPT_LATER = """

_forward, _generate = TinyGPT.forward, TinyGPT.generate


def forward(self, input_ids, labels=None, past_key_values=None, use_cache=False):
    if STAGE < 2:
        raise NotImplementedError("the forward pass is stage 2")
    if labels is not None and STAGE < 3:
        raise NotImplementedError("the loss is stage 3")
    if (past_key_values is not None or use_cache) and STAGE < 4:
        raise NotImplementedError("the cache is stage 4")
    return _forward(self, input_ids, labels, past_key_values, use_cache)


def generate(self, *args, **kwargs):
    if STAGE < 6:
        raise NotImplementedError("generation is stage 6")
    return _generate(self, *args, **kwargs)


TinyGPT.forward, TinyGPT.generate = forward, generate
"""
# tinygpt before stage 5: positions restart at 0 and the mask is an upper-left triangle.
BEFORE_RECTANGULAR = [
    (
        "torch.arange(P, P + T, device=input_ids.device)",
        "torch.arange(0, T, device=input_ids.device)",
    ),
    (
        "torch.ones(T, P + T, dtype=torch.bool, device=x.device).triu(P + 1)",
        "torch.ones(T, P + T, dtype=torch.bool, device=x.device).triu(1)",
    ),
]


def stub(dotted: str) -> str:
    cls, name = dotted.split(".")
    return (
        f"\n\ndef _later(*args, **kwargs):\n    raise NotImplementedError({dotted!r})\n\n\n"
        f"{cls}.{name} = property(_later) if isinstance({cls}.__dict__.get({name!r}), property)"
        f" else _later\n"
    )


def partial(name: str, stage: int) -> str:
    text = (FAITHFUL / CANDIDATES[name]).read_text()
    if name == "tinygpt":
        if stage < 5:
            for old, new in BEFORE_RECTANGULAR:
                assert old in text, old
                text = text.replace(old, new)
        return text + f"\nSTAGE = {stage}\n" + TINYGPT_LATER
    for builds, methods in LATER.get(name, {}).items():
        if stage < builds:
            text += "".join(stub(m) for m in methods)
    return text


STAGES = [(name, s.number) for name, m in mechanisms().items() for s in m.stages]


@pytest.mark.parametrize(("name", "stage"), STAGES, ids=[f"{n}-{s}" for n, s in STAGES])
def test_a_partial_attempt_passes_its_stage(name: str, stage: int, tmp_path: Path) -> None:
    mechanism = mechanisms()[name]
    attempt = tmp_path / attempt_filename(name)
    attempt.write_text(partial(name, stage))
    run = run_stage(ROOT, mechanism, stage, attempt)
    assert not run.problem, run.problem
    selected = [r for r in run.results if mechanism.selects(stage, identity(r))]
    failed = [f"{r.nodeid}: {r.reason}" for r in selected if r.outcome == "failed"]
    assert selected and not failed, "\n".join(failed[:5])
