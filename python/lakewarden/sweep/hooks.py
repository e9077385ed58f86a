"""Named moments of a sweep, for observers: the kill tests stop a sweep at an exact one.

A sweep calls :func:`reached` at ``started`` (lock held, the summary says ``sweeping``),
``batch`` (a batch's outcomes recorded and counted) and ``merging`` (every delete done, outcomes
being merged). Nothing in lakewarden observes them: with no observer, reaching a point is a loop
over an empty tuple, and the delete path reads no setting to decide whether to pause. The tests
register an observer in the sweep's own process (``python/tests/sweep_holding.py``). Observers
run where the point is reached: the distributed engine's batches run in Spark's Python workers,
where none is registered. An observer may delay a sweep; it cannot change what is deleted.
"""

from __future__ import annotations

from typing import Callable

#: the points, in the order a sweep reaches them
POINTS = ("started", "batch", "merging")

Observer = Callable[[str], None]
_observers: list[Observer] = []


def observe(observer: Observer) -> None:
    """Call ``observer(point)`` at every point this process's sweeps reach from now on."""
    _observers.append(observer)


def reached(point: str) -> None:
    """The sweep is at ``point`` (one of :data:`POINTS`): tell the observers, if any."""
    for observer in tuple(_observers):
        observer(point)
