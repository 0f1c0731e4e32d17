"""An attempt folder graded in the same process as this project's packages of the same names.

A seed-style folder holds `cache_aware_lm.py` and `tiny_gpt.py`; its modules import
each other by plain name. Those imports must reach the candidate's files, while this
project's test support keeps importing this project's `cache_aware_lm` (and its
modern variant) and `kv_cache`. Here because it needs the runtime packages installed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gptlab_testkit import load_candidate

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]


def test_candidate_siblings_do_not_shadow_the_projects_packages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder's cache_aware_lm.py imports its own tiny_gpt; this project's imports stay ours."""
    folder = _write_files(
        tmp_path / "seed_labs",
        {
            "tiny_gpt.py": "WHO = 'mine'\nGPTConfig = CausalLMOutput = TinyGPT = None\n",
            "cache_aware_lm.py": (
                "from tiny_gpt import WHO\n"
                "import kv_cache\n"
                "def make_test_model():\n    import tiny_gpt\n    return tiny_gpt.WHO\n"
                "def make_eos_test_model():\n    return kv_cache\n"
            ),
        },
    )
    monkeypatch.setenv("CACHE_AWARE_LM_MODULE", str(folder / "cache_aware_lm.py"))
    monkeypatch.setenv("TINY_GPT_MODULE", str(folder / "tiny_gpt.py"))
    load_candidate.cache_clear()
    try:
        from gptlab_testkit.models import cache_aware_modules

        mine = load_candidate("CACHE_AWARE_LM_MODULE")
        assert mine.WHO == mine.make_test_model() == "mine"
        # one module object per file: the sibling import and the variable agree
        assert load_candidate("TINY_GPT_MODULE").WHO is mine.WHO
        import cache_aware_lm
        import cache_aware_lm.modern
        import kv_cache

        assert cache_aware_lm is not mine and hasattr(cache_aware_lm.modern, "make_test_model")
        assert mine.make_eos_test_model() is kv_cache  # not a sibling: the usual import
        assert cache_aware_modules() == {"candidate": mine}
        assert "tiny_gpt" not in sys.modules
    finally:
        load_candidate.cache_clear()


def _write_files(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, source in files.items():
        (folder / name).write_text(source)
    return folder
