"""Running a suite and reporting what it found.

- `plugin`: the pytest plugin (entry point `gptlab`): owners, scorecards, verdicts.
- `suites`: running pytest for a grade (a fresh interpreter, or forked from a warm one).
- `isolation`, `expected`: each test's own process where asked; the tests a run must report.
- `results`, `scoring`, `reporting`, `brief`: one result per test, what it earns, how
  failures are routed and shown.
- `owners` and `routing.toml`: the failure-to-owner routing table.
"""
