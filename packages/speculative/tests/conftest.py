"""Fixtures for the speculative suite (pytest loads this; tests never import it).

Drafts are built from the target, so every draft has the target's vocabulary and
cache layout: an identical copy, a copy with every weight zeroed (it proposes
token 0 forever), and a scripted draft that equals the target except at chosen
positions, where its argmax moves to another token.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from types import SimpleNamespace

import pytest
import torch


def zeroed_copy(model):
    """All weights zero: logits are all equal, so greedy always picks token 0."""
    draft = copy.deepcopy(model)
    with torch.no_grad():
        for parameter in draft.parameters():
            parameter.zero_()
    return draft


class ScriptedDraft:
    """The target itself, except rows whose query position is in ``wrong_positions``.

    There the logits are rolled by one along the vocabulary, so the argmax becomes
    another token: the draft disagrees exactly with the target's next token after
    those positions, whatever came before. A deterministic, faithful cache-aware model.
    """

    def __init__(self, model, wrong_positions: Iterable[int]) -> None:
        self.model = model
        self.wrong_positions = sorted(set(wrong_positions))

    def __call__(self, input_ids, positions, **kwargs):
        out = self.model(input_ids, positions, **kwargs)
        wrong = torch.isin(positions, torch.tensor(self.wrong_positions, device=positions.device))
        logits = torch.where(wrong[..., None], out.logits.roll(1, dims=-1), out.logits)
        return SimpleNamespace(
            logits=logits,
            past_key_values=out.past_key_values,
            cache_lengths=out.cache_lengths,
            cache_start_positions=out.cache_start_positions,
        )


class WiderVocabulary:
    """The model with one extra (never chosen) vocabulary entry: V + 1 logits."""

    def __init__(self, model) -> None:
        self.model = model

    def __call__(self, input_ids, positions, **kwargs):
        out = self.model(input_ids, positions, **kwargs)
        extra = torch.full_like(out.logits[..., :1], -1e9)
        return SimpleNamespace(
            logits=torch.cat([out.logits, extra], dim=-1),
            past_key_values=out.past_key_values,
            cache_lengths=out.cache_lengths,
            cache_start_positions=out.cache_start_positions,
        )


@pytest.fixture
def drafts() -> SimpleNamespace:
    """``drafts.zeroed(model)``, ``drafts.scripted(model, positions)``, ``drafts.wider(model)``."""
    scripted: Callable[..., ScriptedDraft] = ScriptedDraft
    return SimpleNamespace(zeroed=zeroed_copy, scripted=scripted, wider=WiderVocabulary)
