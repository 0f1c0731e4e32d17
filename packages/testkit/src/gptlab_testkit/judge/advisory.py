"""Which worker-reported facts the running test consulted (the judge's own record).

In a judged run the candidate runs in a worker, and a few facts reach the judge only as
the worker's word: the calls it made inside `oracles.forbidding` / `oracles.CountedCalls`,
a tensor's identity, data pointers and storage (`worker_facts`), and P28's record of
collectives and unwaited handles (`ranks`). The candidate can rewrite that word, so a
verdict resting on it proves nothing. The testkit's helpers note here, in the judge's test
process, each time they answer from such a fact; the plugin reads the note after the test
(`outcome_rested_on`) and the scoring policy (`scoring`) shows the test as advisory. In
process (no judge) the helpers answer from the test's own objects and note nothing.
"""

from __future__ import annotations

WORKER_REPORTED = "(worker-reported)"  # how a failure decided by such a fact says so

_CONSULTED: set[str] = set()


def consulted(fact: str) -> None:
    """A helper answered the running test from the worker's report of `fact`."""
    _CONSULTED.add(fact)


def begin_test() -> None:
    _CONSULTED.clear()


def facts_consulted() -> tuple[str, ...]:
    return tuple(sorted(_CONSULTED))


def outcome_rested_on(passed: bool, failure: str, clauses: tuple[str, ...]) -> str:
    """The facts the test's outcome rested on ("" when none).

    A failure rests on them when its message says a worker-reported fact decided it (the
    clauses it names were then never judged); a failure of another kind (a wrong value, an
    exception from the candidate's code) is the judge's own observation. A pass rests on
    them when the test names an advisory clause (`ADVISORY_CLAUSES`: the fact is what the
    clause promises) or names no clause (a mechanism's suite: the fact is its subject); a
    test whose clauses are all judged on values (P19's every call, guarded against
    concatenation; P01's reports, whose pointer is read as the judge's address) stays
    scored: the guard's answer is not what it scores.
    """
    facts = facts_consulted()
    if not facts:
        return ""
    if not passed:
        return ", ".join(facts) if WORKER_REPORTED in failure else ""
    decisive = any(fact in DECISIVE_FACTS for fact in facts)
    if clauses and not decisive and not any(clause in ADVISORY_CLAUSES for clause in clauses):
        return ""
    return ", ".join(facts)


# Facts a pass rests on whatever clauses the test names: a signature the submitted source
# did not settle (`signatures`) is what a signature clause's test checks, in every suite.
DECISIVE_FACTS = frozenset({"signature"})


# The numbered clauses whose only evidence in a judged run is the worker's word: what it
# reports of the candidate's calls, objects, memory and collectives. Kept in step with
# packages/testkit/README.md ("Advisory clauses") by a test.
ADVISORY_CLAUSES: dict[str, str] = {
    "P01.6": "the data pointer of x's first element (the candidate reports a worker address)",
    "P05.12": "the mask is new memory, never a view of lengths or a cached mask",
    "P06.6": "no Python loop over rows (the worker counts the torch calls)",
    "P06.11": "the result is new memory",
    "P07.10": "the result is new memory",
    "P08.11": "the result is new memory",
    "P09.11": "the result is new memory",
    "P10.12": "the result is new memory",
    "P11.4": "greedy decoding never draws (the worker reports the sampler calls)",
    "P13.12": "the result is new memory",
    "P14.9": "the output is new memory",
    "P15.13": "the outputs are new memory",
    "P16.8": "the output is new memory",
    "P17.13": "each call returns a report object of its own (object identity)",
    "P18.17": "the output is new memory (its inputs unchanged are judged on values)",
    "P19.13": "the output is new memory (its inputs unchanged are judged on values)",
    "P19.14": "no concatenation (the worker reports the calls)",
    "P22.9": "every compacted field is new memory",
    "P25.13": "out and load are new memory (x and the logits unchanged are judged on values)",
    "P26.11": "the result is new memory",
    "P28.7": "every rank issues the same collectives in the same order (the worker's record)",
    "P28.8": "every async handle is waited on (the worker's record)",
    "PT01.6": "no Python loop over rows (the worker counts the torch calls)",
    "PT02.8": "pack and restore make no loop over rows (the worker counts the torch calls)",
    "PT31.9": "fullgraph=True compiles the tensor core, equal to eager (the worker's torch)",
    "PT31.10": "one dynamic compile serves other sizes (compiled by the worker's torch)",
    "PT33.6": "the schema declares no mutation or aliasing (the worker's dispatcher)",
    "PT33.7": "torch.library.opcheck passes (run on the worker's torch)",
    "PT33.8": "a compiled call equals eager (compiled by the worker's torch)",
    "PT34.7": "the schemas and tags declare the mutation truly (the worker's dispatcher)",
    "PT34.8": "torch.library.opcheck passes on both operators (run on the worker's torch)",
    "PT34.9": "a functionalized compiled write keeps the write (compiled by the worker's torch)",
    "PT35.9": "the caches keep their data pointers over a decode (the worker's pointers)",
    "PT35.10": "no concatenation and no .item() inside the call (the worker reports the calls)",
    "PT04.6": "x is never repeated or expanded over K (the worker's largest tensor)",
    "PT06.4": "each layer parameter appears once (parameter identity)",
    "PT06.9": "an appended layer is registered (parameter identity)",
    "PT06.10": "the state dict's entries are the layers' own tensors (identity, pointers)",
    "PT07.7": "a request that fits keeps the buffers' storage (storage identity)",
    "PT08.5": "head.weight is embedding.weight (parameter identity)",
    "PT08.7": "the tie survives a dtype move and a strict load (parameter identity)",
    "PT08.9": "a loaded checkpoint's tensors are copied in, never kept (identity)",
    "PT17.11": "nothing larger than about B*Tq*Tk is built (the worker's largest tensor)",
    "PT23.6": "beam children own their memory (storage identity; test writes reach copies)",
    "PT28.6": "an all-greedy batch never draws (the worker reports the sampler calls)",
    "PT29.6": "no Python loop over the vocabulary (the worker counts the torch calls)",
}


__all__ = [
    "ADVISORY_CLAUSES",
    "WORKER_REPORTED",
    "begin_test",
    "consulted",
    "facts_consulted",
    "outcome_rested_on",
]
