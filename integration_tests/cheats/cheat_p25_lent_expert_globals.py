"""Steal the oracle through an object the grader handed over: the test's expert callables.

An expert's `__call__` is a function of the test module, so its `__globals__` hold the
test's own loop oracle. Judged, the experts stay in the grader and the candidate holds
stand-ins: this tries the stand-in's private door too (`_ask`, straight to the grader,
past the stand-in's own check), then gives up and returns zeros.
"""

import torch

VARIABLE = "DRILL_P25_MODULE"
CHEAT = "oracle theft through the globals of a callable the grader lent"
SAYS = "FAIL"
EARNED = "_honest_p25_zeros.py"  # no more than the same values earn honestly


def _reach(expert, *names):
    value = expert
    for name in names:
        ask = getattr(type(value), "_ask", None)  # a judged stand-in: ask the grader itself
        value = ask(value, "getattr", name) if ask else getattr(value, name)
    return value


def top_k_moe(x, router_logits, experts, k, capacity):
    for path in (("__call__", "__func__", "__globals__"), ("__class__", "__call__", "__globals__")):
        try:
            oracle = _reach(experts[0], *path)["loop_moe"]
            out, counts, _ = oracle(x, router_logits, len(experts), k, capacity)
            return out.to(x.dtype), torch.tensor(counts, dtype=torch.int64)
        except Exception:
            continue
    return torch.zeros_like(x), torch.zeros(len(experts), dtype=torch.int64)
