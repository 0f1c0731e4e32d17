"""The Triton lane's suites: kernels run under Triton's interpreter where there is no CUDA.

Set here, before any kernel module (a candidate imported in this process, the reference)
is decorated; a judged candidate's worker gets the variable from its own environment."""

from __future__ import annotations

import os

import torch

if "TRITON_INTERPRET" not in os.environ and not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"
