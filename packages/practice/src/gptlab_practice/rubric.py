"""The coding rubric's and the model-build rubric's seven dimensions each (a mock's score,
0-4 each, /28): plain data, so the command line reads them without importing the rest."""

from __future__ import annotations

RUBRIC = (  # the coding rubric's seven dimensions (key, what it covers)
    ("contract", "contract, shapes, invalid input"),
    ("tensor", "tensor model: shapes, views, aliasing"),
    ("numerics", "numerics: dtype, stability"),
    ("implementation", "implementation: the behaviour the clauses state"),
    ("testing", "testing: ordinary, degenerate, tail, dtype, invalid"),
    ("performance", "performance: time used, allocation, sync"),
    ("communication", "communication: the ledger and the probes, aloud"),
)
RUBRIC_KEYS = tuple(key for key, _ in RUBRIC)
# The kit's model-build rubric (a model mock's score, 0-4 each, /28): (key, the dimension's
# name as the grader's `rubric` evidence names it).
MODEL_RUBRIC = (
    ("config", "contract & config"),
    ("ownership", "module & state ownership"),
    ("tensor", "tensor mechanics"),
    ("numerics", "numerical correctness"),
    ("forward", "complete forward path"),
    ("tests", "tests & serialization"),
    ("inference", "inference reasoning"),
)
MODEL_RUBRIC_KEYS = tuple(key for key, _ in MODEL_RUBRIC)
ANY_RUBRIC_KEYS = tuple(dict.fromkeys(RUBRIC_KEYS + MODEL_RUBRIC_KEYS))
