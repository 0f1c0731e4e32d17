"""What was handed in, read before anything of it runs.

- `variables`: the swappable implementations, one variable each (and the drills' and
  kernels' published ones).
- `attempts`: an attempt file or a seed-style folder, and the module each file is for.
- `seed_modules`, `signatures`, `cannot_grade`, `checkout`: the seed's file names, a
  callable's signature read from the source, why a submission cannot be graded, where
  this checkout is.
"""
