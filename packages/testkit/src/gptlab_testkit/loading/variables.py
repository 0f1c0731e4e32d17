"""The swappable implementations: one variable per mechanism, model build and drill.

Each names its reference module, the names a candidate must define, the file stems an
attempt folder may use and its contract suite. Drills publish theirs (an entry point of
gptlab-drills, gptlab-kernels): this table reads them without importing those packages.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Variable:
    """One swappable implementation: its variable, reference module and graded names."""

    name: str
    package: str
    default_module: str
    required_names: tuple[str, ...]
    # File stems an attempt folder may use for it (the seed's lab name first).
    file_stems: tuple[str, ...] = ()
    # Its contract suite, relative to the repository root (default packages/<package>/tests).
    tests: str = ""
    # Modules its suite needs that a warm grading process imports before forking, only
    # when this variable is graded (torch._dynamo for the compile drill: ~1 s).
    preload: tuple[str, ...] = ()
    # Third-party distributions its worker may import besides torch and numpy (triton for
    # the Triton lane), and variables set in that worker's environment only.
    worker_distributions: tuple[str, ...] = ()
    worker_environment: tuple[tuple[str, str], ...] = ()

    @property
    def stems(self) -> tuple[str, ...]:
        return self.file_stems or (self.package,)

    @property
    def suite(self) -> Path:
        return Path(self.tests or f"packages/{self.package}/tests")

    @property
    def is_drill(self) -> bool:
        return self.name.startswith(DRILL_PREFIX)


VARIABLES: dict[str, Variable] = {
    variable.name: variable
    for variable in (
        Variable(
            "TINY_GPT_MODULE",
            "tinygpt",
            "tinygpt",
            ("GPTConfig", "CausalLMOutput", "TinyGPT"),
            ("tiny_gpt", "tinygpt"),
        ),
        Variable(
            "MODERN_LM_MODULE",
            "modern_lm",
            "modern_lm",
            ("ModernLMConfig", "ModernLM"),
            ("modern_lm", "m02"),
        ),
        Variable(
            "CACHE_AWARE_LM_MODULE",
            "cache_aware_lm",
            "cache_aware_lm",
            ("make_test_model", "make_eos_test_model"),
        ),
        Variable(  # M03's advanced branch: the cache-aware contract over an M02-shaped model
            "CACHE_AWARE_MODERN_MODULE",
            "cache_aware_modern",
            "cache_aware_lm.advanced",
            ("make_test_model", "make_eos_test_model"),
            ("cache_aware_modern", "m03"),
            tests="packages/cache_aware_lm/tests",
        ),
        Variable("KV_CACHE_MODULE", "kv_cache", "kv_cache", ("append_kv_cache", "KVCache")),
        Variable(
            "PREFIX_CACHE_MODULE",
            "prefix_cache",
            "prefix_cache",
            ("PrefixCacheNamespace", "PrefixMatch", "PrefixCache", "PrefixCachedRunner"),
        ),
        Variable(
            "CHUNKED_PREFILL_MODULE", "chunked_prefill", "chunked_prefill", ("chunked_prefill",)
        ),
        Variable(
            "SPECULATIVE_DECODING_MODULE",
            "speculative",
            "speculative",
            ("speculative_generate",),
            ("speculative_decoding", "speculative"),
        ),
        Variable("PAGED_KV_MODULE", "paged_kv", "paged_kv", ("PagedNamespace", "PagedKVCache")),
        Variable("SCHEDULER_MODULE", "scheduler", "scheduler", ("Engine",)),
        Variable(
            "MOE_LM_MODULE",
            "moe_lm",
            "moe_lm",
            ("SparseMoE", "MoELMConfig", "MoECausalLM"),
            ("moe_lm", "m05"),
        ),
        Variable(
            "RUNTIME_LM_MODULE",
            "runtime_lm",
            "runtime_lm",
            ("RuntimeLMConfig", "RuntimeCausalLM", "IntermediateTensors", "set_attention_context"),
            ("runtime_lm", "m04"),
        ),
        Variable(
            "FRAGMENT_LM_MODULE",
            "fragment_lm",
            "fragment_lm",
            ("FragmentConfig", "PaperFragmentLM"),
            ("fragment_lm", "m10"),
        ),
    )
}

DRILL_PREFIX = "DRILL_"


DRILL_CATALOGUE_GROUP = "gptlab.drills"  # the entry point gptlab-drills publishes


@cache
def drill_catalogue() -> dict[str, Any]:
    """{id: drill} from an installed gptlab-drills, found by its entry point (no import of it
    here: the drills' own tests depend on this package, not the other way round), and from
    every other distribution publishing one (gptlab-kernels: the Triton lane)."""
    found: dict[str, Any] = {}
    for entry in sorted(entry_points(group=DRILL_CATALOGUE_GROUP), key=lambda e: e.name):
        found.update(entry.load())
    return found


def _drill_variables() -> list[Variable]:
    """One variable per repair-lane drill (DRILL_P19_MODULE), when gptlab-drills is installed.

    Its catalogue is the one record of a drill's graded names, file stems and suite
    (packages/drills/tests/<id>); its scorecard row is the lower-case id.
    """
    return [
        Variable(
            drill.variable,
            drill.key,
            drill.module,
            drill.graded,
            drill.stems,
            tests=drill.suite,
            preload=drill.preload,
            worker_distributions=getattr(drill, "worker_distributions", ()),
            worker_environment=getattr(drill, "worker_environment", ()),
        )
        for drill in drill_catalogue().values()
    ]


VARIABLES.update((variable.name, variable) for variable in _drill_variables())

VARIABLE_BY_PACKAGE: dict[str, Variable] = {v.package: v for v in VARIABLES.values()}
# The mechanisms' variables: the ladder `grade` runs when no candidate is given.
MECHANISM_VARIABLES = tuple(name for name, v in VARIABLES.items() if not v.is_drill)
