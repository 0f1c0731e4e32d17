"""A step commits together or not at all: staged K/V writes, generator snapshots, StepError.

A step's model call writes K/V into reserved pool slots, then sampling draws from
the requests' generators. Either can fail (a model error, non-finite logits, a
fault anywhere). So nothing a later step reads changes until everything succeeded:

    staged = StagedWrites()                  # the reservations of this step's rows
    logits = forward_mixed_batch(..., staged=staged)   # K/V written, not yet counted
    drawn = draw_tokens(...)                 # generators restored if any draw fails
    staged.commit()                          # lengths grow, full blocks published

and on any failure ``staged.abort()`` gives every reserved block back and undoes
every copy on write (``paged_kv.PendingAppend.abort``). Scheduling decisions taken
before the call (an admission, a preemption) stand: they are valid states anyway.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from paged_kv import PendingAppend


class StepError(RuntimeError):
    """``Engine.step`` failed and changed no request; ``request_ids`` are those it concerns.

    One id: that request's own work failed (its draw), and it alone. Several: the
    step's one model call failed for all of its rows. ``step()`` may be called again.
    """

    def __init__(self, message: str, request_ids: Sequence[Hashable]) -> None:
        super().__init__(message)
        self.request_ids = tuple(request_ids)


class StagedWrites:
    """The reservations of one step's rows, committed or aborted together."""

    def __init__(self) -> None:
        self._pending: list[PendingAppend] = []

    def add(self, pending: PendingAppend) -> None:
        self._pending.append(pending)

    def hand_over(self, other: StagedWrites) -> None:
        """Move these reservations to ``other`` (in order), to commit with its own."""
        other._pending.extend(self._pending)
        self._pending.clear()

    def commit(self) -> None:
        """Every row's hashes first (may fail: nothing changed), then plain updates."""
        digests = [pending.digests() for pending in self._pending]
        for pending, hashes in zip(self._pending, digests, strict=True):
            pending.apply(hashes)
        self._pending.clear()

    def abort(self) -> None:
        """Undo every reservation, the last first (a later one may depend on earlier)."""
        while self._pending:
            self._pending.pop().abort()


def abort_all(pendings: Sequence[PendingAppend]) -> None:
    for pending in reversed(pendings):
        pending.abort()
