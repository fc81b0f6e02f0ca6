"""Fast path ``memory.occupancy-replay`` (issue 24): the DM occupancy (:class:`visa.schedule.occupancy.DmOccupancy`,
the trace's "live DM bytes" counter, manual "Scheduling" L7042–7070, DM shared by both contexts L150–155) of an
operation that touches the same spans (the same objects: a span never changes) on the same chips as the operation
noted before it, while no DM tensor was allocated, released or has died since
(:meth:`visa.memory.registry.Registry.dm_generation`), extends the lifetimes that one extended and adds the same
anonymous bytes, instead of comparing every live DM tensor's span with the operation's again.

Why that is the reference's result: with the DM generation unchanged, the live DM regions are the ones the last
note saw, each with the lifetime it opened then (an open lifetime's span and bytes never change), so nothing is
started or closed; the same spans on the same chips then overlap the same lifetimes and cover the same bytes, which
leaves the same anonymous remainder.  With the path off every note compares afresh.
"""

from __future__ import annotations

from visa import fastpaths

__all__ = ["REPLAY"]

REPLAY = fastpaths.register("memory.occupancy-replay", "the DM occupancy of an operation touching the same spans "
                            "as the one noted before it, with no DM tensor allocated, released or dead since, "
                            "extends the lifetimes that one extended (and adds the same anonymous bytes) instead "
                            "of comparing every live tensor's span again")
