"""Fixtures for the composed slice: every mechanism comes through its variable."""

from __future__ import annotations

import pytest

from gptlab_testkit.models import cache_aware_modules

MODEL_MODULES = cache_aware_modules()


@pytest.fixture(params=sorted(MODEL_MODULES), scope="module")
def model_module(request: pytest.FixtureRequest):
    return MODEL_MODULES[request.param]
