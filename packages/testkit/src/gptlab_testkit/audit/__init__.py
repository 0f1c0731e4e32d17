"""Auditing the suites: does every test catch what it should and pass what it should?

- `known_bad`: one-mistake candidates must fail, faithful strangers pass, clause mutants
  fail their clause (`known_bad_stamps`: re-proved only when what a verdict rests on changed).
- `cheats`: hostile submissions must earn nothing they did not do.
- `mutation`: mutmut on every reference, each survivor accounted for (`import_time`: code
  run at import judged again in a fresh interpreter).
"""
