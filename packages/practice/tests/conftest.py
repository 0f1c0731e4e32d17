"""A fake clock and a `practise` runner: the CLI in-process, on a temporary home."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path

import pytest

from gptlab_practice.cli import main

ROOT = Path(__file__).resolve().parents[3]


@dataclass
class FakeClock:
    now: datetime = field(default_factory=lambda: datetime(2026, 12, 1, 9, 0, tzinfo=UTC))

    def __call__(self) -> datetime:
        return self.now

    def advance(self, *, minutes: float = 0, days: int = 0) -> None:
        self.now += timedelta(minutes=minutes, days=days)


@dataclass
class Run:
    code: int
    out: str
    err: str


Practise = Callable[..., Run]


# Faithful drill attempts written for these tests (text a learner would paste in): the
# drills' references may not exist yet, and a test must not lean on them.
P19 = '''
import math

import torch


def decode_attention(q, k_cache, v_cache, lengths):
    """q [B,Hq,1,D], caches [B,Hkv,S,D] (padded capacity), lengths [B] -> [B,Hq,1,D]."""
    if q.dim() != 4 or q.shape[2] != 1:
        raise ValueError(f"q must be [B, Hq, 1, D], got {tuple(q.shape)}")
    if k_cache.dim() != 4 or k_cache.shape != v_cache.shape:
        raise ValueError(f"k_cache {tuple(k_cache.shape)} and v_cache {tuple(v_cache.shape)}")
    B, Hq, _, D = q.shape
    _, Hkv, S, _ = k_cache.shape
    if k_cache.shape[0] != B or k_cache.shape[3] != D or Hq % Hkv:
        raise ValueError(f"q {tuple(q.shape)} does not fit k_cache {tuple(k_cache.shape)}")
    if lengths.shape != (B,) or bool(((lengths < 1) | (lengths > S)).any()):
        raise ValueError(f"lengths must be [B] in 1..{S}, got {lengths.tolist()}")
    k = k_cache.repeat_interleave(Hq // Hkv, dim=1).float()
    v = v_cache.repeat_interleave(Hq // Hkv, dim=1).float()
    scores = q.float() @ k.transpose(-2, -1) / math.sqrt(D)
    valid = torch.arange(S, device=q.device)[None, :] < lengths[:, None]
    scores = scores.masked_fill(~valid[:, None, None, :], float("-inf"))
    return (torch.softmax(scores, dim=-1) @ v).to(q.dtype)
'''

PT17 = '''
import torch


def position_causal_mask(query_positions, key_positions, key_valid):
    """[B,Tq], [B,Tk], [B,Tk] -> bool [B,1,Tq,Tk], True = may attend."""
    for name, t in (("query_positions", query_positions), ("key_positions", key_positions)):
        if not isinstance(t, torch.Tensor) or t.dim() != 2:
            raise ValueError(f"{name} must be a 2-D tensor")
    if key_valid.shape != key_positions.shape or key_valid.dtype != torch.bool:
        raise ValueError("key_valid must be bool and shaped like key_positions")
    if query_positions.shape[0] != key_positions.shape[0]:
        raise ValueError("query_positions and key_positions differ in batch size")
    if bool((query_positions[:, 1:] < query_positions[:, :-1]).any()):
        raise ValueError("query_positions must not decrease along a row")
    for row, valid in zip(key_positions, key_valid):
        kept = row[valid]
        if bool((kept[1:] < kept[:-1]).any()):
            raise ValueError("key_positions must not decrease among the valid keys of a row")
    mask = key_positions[:, None, :] <= query_positions[:, :, None]
    return (mask & key_valid[:, None, :])[:, None]
'''


@pytest.fixture
def drills() -> dict[str, str]:
    """{"P19": faithful attempt text, "PT17": ...}."""
    return {"P19": P19, "PT17": PT17}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "practice"


@pytest.fixture
def practise(home: Path, clock: FakeClock, capsys: pytest.CaptureFixture[str]) -> Practise:
    """practise("check", "--all") -> Run(exit code, stdout, stderr)."""

    def run(*argv: str) -> Run:
        capsys.readouterr()
        code = main(["--home", str(home), "--root", str(ROOT), *argv], clock=clock)
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run


@cache
def _partial_attempts() -> object:
    """tests/partial_attempts.py (test folders are not packages: loaded by path)."""
    spec = importlib.util.spec_from_file_location(
        "practice_partial_attempts", Path(__file__).with_name("partial_attempts.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def partial_attempt() -> Callable[[str, int], str]:
    """partial_attempt("kv_cache", 3): the attempt text after building stages 1..3 only."""
    build: Callable[[str, int], str] = _partial_attempts().partial  # type: ignore[attr-defined]
    return build


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: a test of many grader runs (minutes)")
