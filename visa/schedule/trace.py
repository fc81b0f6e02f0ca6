"""The schedule as a Chrome trace that Perfetto shows at true time (manual "Scheduling", L7042–7070; the
core clock, ``clocks.core_hz``, L2623, L2636).

* ``ts`` and ``dur`` are microseconds (Perfetto's unit for the JSON trace format), from cycles and the
  profile's core clock; ``args["cycles"]`` keeps the exact integer cycles.
* One process per chip (``pid`` > 0, named ``device D (RNGD) chip C``) and one thread per resource — ``main``,
  ``sub``, ``dma0`` … ``dma7``, ``pcie`` — (``tid`` > 0, named).  A resource runs one operation at a time, so
  the slices of a thread never overlap.
* One complete (``X``) slice per operation and resource it occupies; its args hold every engine's
  configuration, the bytes it moved per path, its MACs, the user's ``file:line`` that issued it and the
  operations it waited for.
* One flow (``s`` at the earlier operation, ``f`` binding to the enclosing slice of the later one) per
  dependency between operations on different tracks (their first resources differ: another context, another
  DMA engine or another chip).
* A counter track per chip, "live DM bytes": the DM bytes held by tensors, in time order
  (:mod:`visa.schedule.occupancy`: a tensor is held from the start of the operation that writes it to the end
  of the last operation that touches it).
"""

from __future__ import annotations

from typing import Any

from visa.hw import HardwareProfile
from visa.schedule.core import Lane, Operation, Schedule

__all__ = ["events", "CHIP_PIDS", "thread_ids"]

#: pids per device in a multi-device trace: device d, chip c is ``d * CHIP_PIDS + c + 1``.
CHIP_PIDS = 64


def thread_ids(hw: HardwareProfile) -> dict[str, int]:
    """The thread id of each resource (all > 0): main 1, sub 2, dma0… 3…, pcie last."""
    names = ["main", "sub", *(f"dma{e}" for e in range(hw.dma.engines_per_chip)), "pcie"]
    return {n: k + 1 for k, n in enumerate(names)}


def _us(hw: HardwareProfile, cycles: float) -> float:
    return cycles * 1e6 / hw.clocks.core_hz


def _args(op: Operation) -> dict[str, Any]:
    args: dict[str, Any] = {"cycles": int(op.cycles), "start_cycle": int(op.start), "op": op.index,
                            "track": op.track, "source": op.source}
    for r in op.engines:
        args[r.engine] = f"{r.config} ({r.cycles} cycles{f', latency {r.latency}' if r.latency else ''})"
    if op.traffic:
        args["bytes"] = dict(op.traffic)
    if op.macs:
        args["macs"] = op.macs
    if op.deps:
        args["waits_for"] = [f"#{d.op} {'/'.join(d.kinds)}" for d in op.deps]
    if op.stretch:
        args["contention_cycles"] = op.stretch
    for k, n in enumerate(op.notes):
        args[f"note{k}"] = n
    return args


def events(schedule: Schedule, hw: HardwareProfile, device: int = 0,
           live_dm: dict[int, list[tuple[int, int]]] | None = None) -> list[dict[str, Any]]:
    """The trace events of one context's schedule as device ``device`` (module docstring).  ``live_dm[chip]``
    is the DM bytes held on that chip as ``(cycle, bytes)`` steps in time order
    (:meth:`visa.schedule.occupancy.DmOccupancy.samples`)."""
    tids = thread_ids(hw)
    out: list[dict[str, Any]] = []
    used: set[Lane] = set()

    def pid(chip: int) -> int:
        return device * CHIP_PIDS + chip + 1

    def tid(lane: Lane) -> int:
        return tids.setdefault(lane[1], len(tids) + 1)

    for op in schedule.ops:
        for lane in op.lanes:
            used.add(lane)
            out.append({"name": op.name, "cat": op.track, "ph": "X", "pid": pid(lane[0]), "tid": tid(lane),
                        "ts": _us(hw, op.start), "dur": _us(hw, op.cycles), "args": _args(op)})
    flow = device * 1_000_000 + 1
    for op in schedule.ops:
        if not op.lanes:
            continue
        for d in op.deps:
            src = schedule.ops[d.op]
            if not src.lanes or src.lanes[0] == op.lanes[0]:
                continue  # the same thread: its order already shows the dependency
            a, b = src.lanes[0], op.lanes[0]
            at = max(src.start, src.end - 1) if src.cycles else src.start
            common = {"name": "/".join(d.kinds), "cat": "dependency", "id": flow}
            out.append({**common, "ph": "s", "pid": pid(a[0]), "tid": tid(a), "ts": _us(hw, at)})
            out.append({**common, "ph": "f", "bp": "e", "pid": pid(b[0]), "tid": tid(b), "ts": _us(hw, op.start)})
            flow += 1
    chips = sorted({c for c, _ in used}) or [0]
    if live_dm is not None:
        for c in chips:
            for cycle, nbytes in live_dm.get(c, [(0, 0)]):
                out.append({"name": "live DM bytes", "ph": "C", "pid": pid(c), "ts": _us(hw, cycle),
                            "args": {"bytes": int(nbytes)}})
    for c in chips:
        out.append({"name": "process_name", "ph": "M", "pid": pid(c),
                    "args": {"name": f"device {device} ({hw.name}) chip {c}"}})
        out.append({"name": "process_sort_index", "ph": "M", "pid": pid(c), "args": {"sort_index": pid(c)}})
    for c, t in sorted(used, key=lambda ln: (ln[0], tid(ln))):
        out.append({"name": "thread_name", "ph": "M", "pid": pid(c), "tid": tid((c, t)), "args": {"name": t}})
        out.append({"name": "thread_sort_index", "ph": "M", "pid": pid(c), "tid": tid((c, t)),
                    "args": {"sort_index": tid((c, t))}})
    return out
