"""scheduler: continuous batching with chunked prefill and preemption over paged K/V.

Each ``Engine.step`` decides under a token budget and a sequence cap which
requests run (running decodes first, then prefill chunks in arrival order;
admission only when the pool has blocks; preemption of the most recently
admitted request, recomputed later, when a block runs out), runs ONE cache-aware
model call over the mixed ragged batch (packed through the model's serving
seam, or padded rows) through a ``paged_kv.PagedKVCache``, and
samples, finishes and frees. ``Engine.generate`` streams tokens per request.
"""

from .atomic import StagedWrites, StepError
from .batch import forward_mixed_batch, pad_rows
from .engine import Engine, EngineStats, ScheduledRow, StepRecord, StreamOutput
from .packed import RaggedLayout, RaggedPagedAttention, forward_packed, ragged_layout
from .policy import Policy, StepPlan
from .request import Request, RequestStatus
from .sampling import next_token

__all__ = [
    "Engine",
    "EngineStats",
    "Policy",
    "RaggedLayout",
    "RaggedPagedAttention",
    "Request",
    "RequestStatus",
    "ScheduledRow",
    "StagedWrites",
    "StepError",
    "StepPlan",
    "StepRecord",
    "StreamOutput",
    "forward_mixed_batch",
    "forward_packed",
    "next_token",
    "pad_rows",
    "ragged_layout",
]
