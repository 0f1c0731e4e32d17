"""The scheduler's engine serves the fragment: mixed requests, exactly its own greedy tokens
(M10.12, extension). The fragment's cache follows the cache-aware contract, so the engine's
padded route (rows with their own cache lengths, through ``forward``) runs it unchanged.
"""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import candidate
from gptlab_testkit.engine_driver import EngineDriver

fragment = candidate("FRAGMENT_LM_MODULE")
scheduler = candidate("SCHEDULER_MODULE")  # the engine that serves it (the reference by default)

pytestmark = [pytest.mark.extension, pytest.mark.owner("fragment_serving")]


class Served:
    """The candidate behind the cache-aware call only (no serving seam of its own)."""

    def __init__(self, model):
        self.model = model

    def __call__(self, *args, **kwargs):
        return self.model(*args, **kwargs)

    def parameters(self):
        return self.model.parameters()


def greedy_alone(model, prompt, new_tokens):
    """The model's own greedy tokens: prefill at positions 0.., then one cached step each."""
    ids = torch.tensor([prompt])
    out = model(ids, torch.arange(len(prompt))[None], use_cache=True)
    tokens = []
    for step in range(new_tokens):
        token = int(out.logits[0, -1].argmax())
        tokens.append(token)
        if step + 1 == new_tokens:
            break
        position = torch.tensor([[len(prompt) + step]])
        out = model(torch.tensor([[token]]), position, out.past_key_values, out.cache_lengths,
                    out.cache_start_positions, use_cache=True)  # fmt: skip
    return tokens


PROMPTS = [[3, 1, 4, 1, 5, 9, 2, 6], [5, 3], [8, 9, 7, 9, 3, 2, 3, 8, 4, 6, 2], [2, 7, 1], [6]]
BUDGETS = [6, 9, 4, 7, 8]


@pytest.mark.clause("M10.12")
@pytest.mark.parametrize(("num_blocks", "budget"), [(40, 64), (9, 6)], ids=["roomy", "preempting"])
def test_the_engine_serves_mixed_requests_with_the_model_s_own_greedy_tokens(
    m10, num_blocks, budget
):
    config = m10.config()
    model = m10.loaded(config, m10.random_state(config, seed=110))
    requests = enumerate(zip(PROMPTS, BUDGETS, strict=True))
    want = {i: greedy_alone(model, p, n) for i, (p, n) in requests}
    engine = scheduler.Engine(
        Served(model), context_length=64, num_blocks=num_blocks, block_size=4,
        max_num_batched_tokens=budget, max_num_seqs=4,
    )  # fmt: skip
    driver = EngineDriver(engine)
    for i in range(3):  # three now, two arrive while those run
        driver.add(i, PROMPTS[i], BUDGETS[i])
    for _ in range(3):
        driver.step()
    for i in range(3, 5):
        driver.add(i, PROMPTS[i], BUDGETS[i])
    driver.run()
    assert driver.outputs == want
    if num_blocks == 9:
        assert engine.stats.preemptions > 0
