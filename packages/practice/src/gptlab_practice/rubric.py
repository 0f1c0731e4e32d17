"""The coding rubric's seven dimensions (a mock's score, 0-4 each, /28): plain data, so the
command line reads them without importing the rest."""

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
