"""The reference engine's own promises (extension): streaming, one call per step,
the padding rule, the CLI, and longer requests than the contract floor allows."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gptlab_testkit import boundary_settings, candidate, test_device

sched = candidate("SCHEDULER_MODULE")

pytestmark = pytest.mark.extension


class Recording(torch.nn.Module):
    """The model, recording every call's positions, cache lengths and starts."""

    def __init__(self, model) -> None:
        super().__init__()
        self.inner = model
        self.calls: list[tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]] = []

    def forward(self, input_ids, positions, past=None, lengths=None, starts=None, use_cache=False):
        self.calls.append((positions.clone(), lengths, starts))
        return self.inner(input_ids, positions, past, lengths, starts, use_cache=use_cache)


def engine_over(model, **sizes):
    defaults = {
        "context_length": 16,
        "num_blocks": 16,
        "block_size": 2,
        "max_num_batched_tokens": 6,
        "max_num_seqs": 4,
    }
    return sched.Engine(model, **{**defaults, **sizes})


@pytest.mark.owner("mixed_batch")
def test_one_model_call_per_step_with_each_rows_own_positions(model, greedy_alone):
    recording = Recording(model)
    engine = engine_over(recording, num_blocks=9)
    prompts = {"a": [1, 2, 3, 4, 5], "b": [6, 7], "c": [8, 9, 10, 11, 12, 13, 14]}
    for rid, prompt in prompts.items():
        engine.add_request(rid, prompt, 16 - len(prompt))
    outputs: dict[str, list[int]] = {rid: [] for rid in prompts}
    recording.calls.clear()  # the construction probe
    steps = 0
    for _ in range(400):
        if not engine.has_unfinished_requests():
            break
        record = engine.step()
        steps += bool(record.scheduled)
        for rid, token in record.emitted.items():
            outputs[rid].append(token)
    assert len(recording.calls) == steps == engine.stats.steps
    assert engine.stats.preemptions > 0
    for positions, lengths, starts in recording.calls:
        assert int(positions.max()) < 16, "padding left the context"
        if lengths is not None:
            assert torch.equal(positions[:, 0], starts + lengths)
    for rid, prompt in prompts.items():
        assert outputs[rid] == greedy_alone(prompt, 16 - len(prompt))


@pytest.mark.owner("mixed_batch")
def test_generate_streams_what_steps_emit(model, greedy_alone):
    prompts = [[3, 1, 4, 1, 5], [9, 2, 6], [5, 3, 5, 8, 9, 7, 9]]
    budgets = [6, 9, 4]
    engine = engine_over(model)
    stream = list(engine.generate(prompts, budgets))
    for index, prompt in enumerate(prompts):
        mine = [out for out in stream if out.index == index]
        assert [out.token_id for out in mine] == greedy_alone(prompt, budgets[index])
        assert [out.finished for out in mine] == [False] * (len(mine) - 1) + [True]
    assert not engine.has_unfinished_requests()


@pytest.mark.owner("mixed_batch")
def test_generate_seeds_prompt_i_with_seed_plus_i(model):
    engine = engine_over(model)
    both = list(engine.generate([[1, 2], [1, 2]], 8, temperature=1.0, seed=40))
    alone = list(engine.generate([[1, 2]], 8, temperature=1.0, seed=41))
    assert [o.token_id for o in both if o.index == 1] == [o.token_id for o in alone]


@pytest.mark.owner("mixed_batch")
def test_generate_shows_progress_when_asked(model, capsys):
    engine = engine_over(model)
    list(engine.generate([[1, 2, 3]] * 3, 4, progress=True))
    assert "generate" in capsys.readouterr().err
    list(engine.generate([[1, 2, 3]], 4))
    assert capsys.readouterr().err == ""


@pytest.mark.owner("mixed_batch")
@boundary_settings(4)
@given(data=st.data())
def test_longer_requests_on_the_full_context(data, model_id):
    """The reference test models have context 32: prompts up to 20, outputs up to 12."""
    from gptlab_testkit.models import cache_aware_modules

    model = cache_aware_modules()[model_id].make_test_model().to(test_device())
    block_size = data.draw(st.sampled_from([2, 4, 8]))
    requests = []
    for index in range(data.draw(st.integers(2, 6))):
        prompt = data.draw(st.lists(st.integers(0, 15), min_size=1, max_size=20))
        requests.append((f"r{index}", prompt, data.draw(st.integers(1, 32 - len(prompt)))))
    need = max(-(-(len(p) + n - 1) // block_size) for _, p, n in requests)
    engine = engine_over(
        model,
        context_length=32,
        block_size=block_size,
        num_blocks=need + data.draw(st.integers(0, 8)),
        max_num_batched_tokens=data.draw(st.integers(1, 24)),
    )
    stream = list(engine.generate([p for _, p, _ in requests], [n for _, _, n in requests]))
    for index, (_, prompt, n) in enumerate(requests):
        ids = torch.tensor([prompt], device=test_device())
        want = model.generate(ids, torch.arange(len(prompt), device=test_device())[None], n)
        got = [out.token_id for out in stream if out.index == index]
        assert got == want[0, len(prompt) :].tolist()


@pytest.mark.owner("batch_budget")
def test_the_padding_rule_cuts_a_chunk_near_the_context_end(model, rows_of):
    """b decodes at position 13; a new 12-token prompt's chunk is cut to 16 - 13 = 3."""
    engine = engine_over(model, max_num_batched_tokens=12)
    engine.add_request("b", list(range(1, 13)), 4)
    assert rows_of(engine.step()) == {"b": (12, "prefill")}  # emits the token at 12
    assert rows_of(engine.step()) == {"b": (1, "decode")}  # emits the token at 13
    engine.add_request("c", list(range(12)), 2)
    assert rows_of(engine.step()) == {"b": (1, "decode"), "c": (3, "prefill")}


@pytest.mark.owner("mixed_batch")
def test_pad_rows_continues_each_rows_positions():
    input_ids, positions, counts = sched.pad_rows([([5], 7), ([1, 2, 3], 0)], torch.device("cpu"))
    assert input_ids.tolist() == [[5, 0, 0], [1, 2, 3]]
    assert positions.tolist() == [[7, 8, 9], [0, 1, 2]]
    assert counts.tolist() == [1, 3]


@pytest.mark.owner("mixed_batch")
def test_cli_serves_a_random_model(capsys):
    from scheduler.cli import main

    assert main(["--random", "--max-new-tokens", "5", "--prompt", "ab", "--prompt", "c"]) == 0
    out = capsys.readouterr().out
    assert "random test model" in out and "2 requests, 10 tokens" in out
