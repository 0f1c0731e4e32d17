#!/usr/bin/env bash
# The Triton lane on a GPU, in one command: the suites compiled (no interpreter), then the
# benchmark of each kernel against torch. Run from the repository root in an environment
# where gptlab-kernels and gptlab-testkit are installed (a CUDA torch, triton).
set -euo pipefail
unset TRITON_INTERPRET
python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'gpu_check: no CUDA device')"
# In-process (not judged): the worker's sandbox holds no GPU device.
python -m pytest packages/kernels/tests -q -p no:cacheprovider --gptlab-workers 0
python packages/kernels/bench/bench_kernels.py
