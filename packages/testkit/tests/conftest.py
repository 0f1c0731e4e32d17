"""Fixtures the testkit's own tests share."""

from __future__ import annotations

from pathlib import Path

import pytest

from gptlab_testkit.loading.checkout import ROOT_VARIABLE, find_checkout


@pytest.fixture
def away_from_the_checkout(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """Run from outside the checkout, grading it through `$GPTLAB_ROOT`. A class run started
    at the checkout's root guards that checkout: whatever changed while a submission ran
    is put back, a developer's edits beside the tests too. The class tests need no guard."""
    root = find_checkout()
    monkeypatch.setenv(ROOT_VARIABLE, str(root))
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    return root
