"""Naming what a learner practises: a mechanism (`tinygpt`, the seed's `tiny_gpt`, the kit's
`M01`), a named re-solve (`modern_lm:layer_reconstruction`), a drill (`P19`) or a kernel
(`T04`). Read from stages.toml and the drill and kernel catalogues only, so an unknown name
is answered before torch is imported."""

from __future__ import annotations

import difflib
import re

from gptlab_drills.catalogue import DRILLS

from .errors import RefusedError, UsageError
from .stages import KERNELS_PACKAGE, Mechanism, kernels, mechanisms, resolves, unit_named, units

KERNEL_ID = re.compile(r"[Tt]\d\d")  # a Triton-lane kernel's id (T04)


def item_named(name: str) -> Mechanism:
    """The unit a typed name means; an unknown name is a UsageError with the nearest names,
    a kernel id without the kernels installed a RefusedError naming the install."""
    unit = unit_named(name)
    if unit is not None:
        return unit
    if KERNEL_ID.fullmatch(name) and not kernels():
        raise RefusedError(
            f"{name.upper()} is a Triton-lane kernel and {KERNELS_PACKAGE} is not installed"
            ' (practice alone does not bring triton): `pip install "packages/kernels[test]"`'
            " from the checkout"
        )
    raise UsageError(f"unknown item {name!r} ({did_you_mean(name)}); `start` alone lists them")


def did_you_mean(name: str) -> str:
    """`did you mean kv_cache?` from every name a learner may type (case and `-` aside)."""
    spelled: dict[str, str] = {}
    for unit in units().values():
        for typed_name in unit.names:
            spelled.setdefault(typed_name.lower(), unit.package)
    typed = name.lower().replace("-", "_")
    close = difflib.get_close_matches(typed, spelled, n=3, cutoff=0.6)
    if close:
        return "did you mean " + " or ".join(dict.fromkeys(spelled[c] for c in close)) + "?"
    return (
        f"expected a mechanism ({', '.join(mechanisms())}), a named re-solve"
        f" ({', '.join(resolves())}), a drill id ({_drill_ranges()})"
        " or a Triton kernel (T01..T08)"
    )


def _drill_ranges() -> str:
    """`P01..P28, PT01..PT40`: the catalogue's drill ids by series (it grows as cases land)."""
    ids = [d.id for d in DRILLS.values()]
    ranges = []
    for series in ("P", "PT"):
        own = sorted(i for i in ids if i.rstrip("0123456789") == series)
        if own:
            ranges.append(f"{own[0]}..{own[-1]}" if len(own) > 1 else own[0])
    return ", ".join(ranges)


def label(item: str) -> str:
    """An item as lists name it: `M02 modern_lm` for a model build, else its key."""
    unit = units().get(item)
    return unit.label if unit else item
