"""The judge: a judged candidate's code runs in a worker process, never in the tests' process.

- `policy`: which variables are judged, what their worker may import and see, its limits.
- `client`: the worker's process from the judge's side, and the proxies (`RemoteModule`,
  `RemoteObject`) through which a test calls the candidate.
- `worker_facts`: the facts the worker reports with each tensor (identity, pointers,
  shared memory), recorded here; `advisory` notes each verdict resting on them.
- `lending`, `shipping`, `remote_autograd`: what the judge hands the worker (the tests'
  objects, functions as source, gradients).
- `sandbox`, `reaper`, `defaults`: where and under which limits a worker runs.
- `watched_calls`, `raised_at`, `ranks`: the candidate's torch calls watched, the line of its
  code that raised, a distributed rank's record.

The worker itself is the package `gptlab_worker`.
"""
