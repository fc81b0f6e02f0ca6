"""The profile of a kernel: per track busy, idle and the critical path; per main-context pass and per kernel the
roofline (manual "Scheduling" L7042–7070; bandwidths "Memory Performance" L2848–3009; MAC array L4378–4391).

The roofline compares the simulated cycles with what the hardware could not beat:

* MAC-bound cycles: multiply-accumulates ÷ the chips' MACs per cycle for the dtype
  (:meth:`visa.hw.profile.ContractionEngine.macs_per_slice_cycle` × slices per chip × chips);
* memory-bound cycles, per path: bytes ÷ the path's bandwidth in bytes per core cycle, read from
  :func:`visa.hw.paths.bandwidth` (the figure the DMA cost model uses too) — ``HBM`` (32 channels × 48 B/cycle
  per chip, reads and writes together), ``DMA`` (8 engines × 256 B/cycle), ``PCIe`` (30 B/cycle per chip) and
  the Tensor Unit's DM ports, each its own path: ``fetch`` and ``commit`` of the main context (32 B/cycle per
  slice each), ``fetch (sub)`` and ``commit (sub)`` of the sub context (8 B/cycle per slice);
* the bound is the largest of these, and utilisation = bound ÷ simulated cycles (1.0: at the hardware's limit).
  Every path is a resource the schedule never lets two operations use beyond its rate (a context runs one
  command at a time, a DMA engine one transfer, an HBM channel one DMA's transfers, a PCIe link one transfer),
  so no utilisation exceeds 100% (tests/test_timing_invariants.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from visa.hw import HardwareProfile
from visa.hw.paths import bandwidth
from visa.schedule.core import Operation, Schedule

__all__ = ["Roofline", "TrackProfile", "PassProfile", "KernelReport", "roofline", "build"]


@dataclass(frozen=True)
class Roofline:
    """MAC- and memory-bound cycles of some work against the cycles it took (module docstring)."""

    cycles: int
    macs: int
    mac_cycles: float
    bytes: dict[str, int]
    path_cycles: dict[str, float]

    @property
    def bound(self) -> str:
        """What bounds the work: ``"MAC"`` or a data path (``"HBM"``, ``"DMA"``, ``"PCIe"``, ``"fetch"``, …)."""
        best = ("MAC", self.mac_cycles)
        for k, v in self.path_cycles.items():
            if v > best[1]:
                best = (k, v)
        return best[0]

    @property
    def bound_cycles(self) -> float:
        """The hardware's lower bound on the cycles (the largest of the MAC- and memory-bound cycles)."""
        return max([self.mac_cycles, *self.path_cycles.values()])

    @property
    def utilisation(self) -> float:
        """Bound ÷ simulated cycles (0 when nothing ran)."""
        return self.bound_cycles / self.cycles if self.cycles else 0.0

    def __str__(self) -> str:
        parts = ([f"MAC {_fmt(self.mac_cycles)}"] if self.macs else []) + \
            [f"{k} {_fmt(v)}" for k, v in self.path_cycles.items()]
        return (f"{self.utilisation:6.1%} of the {self.bound}-bound {_fmt(self.bound_cycles)} cycles "
                f"({', '.join(parts) or 'no MACs, no traffic'}; simulated {self.cycles:,})")


def _fmt(cycles: float) -> str:
    """Cycles with as many decimals as a small bound needs."""
    return f"{cycles:,.0f}" if cycles >= 100 else f"{cycles:.2g}" if cycles < 1 else f"{cycles:.1f}"


@dataclass(frozen=True)
class TrackProfile:
    """One resource of one chip: cycles busy, idle within the makespan, operations run, and cycles of its
    operations that lie on the critical path (shortening those shortens the kernel)."""

    chip: int
    track: str
    busy: int
    idle: int
    ops: int
    critical: int = 0


@dataclass(frozen=True)
class PassProfile:
    """One main-context pass: where it ran and its roofline."""

    index: int
    name: str
    start: int
    cycles: int
    source: str
    roofline: Roofline


@dataclass
class KernelReport:
    """What :meth:`visa.Context.report` returns: the profile of everything a context ran.

    ``roofline`` covers the whole run (host transfers included), ``kernel`` the operations ``@device`` kernels
    issued (inside ``launch``), from the first one's start to the last one's end (``None`` without a launch).

    ``str(report)`` is the table ``visa run`` prints; :meth:`text` adds every operation and what it waited for."""

    device: str
    makespan: int
    engines: dict[str, int]
    tracks: list[TrackProfile]
    critical_path: list[int]
    passes: list[PassProfile]
    roofline: Roofline
    kernel: Roofline | None = None
    warnings: list[str] = field(default_factory=list)
    operations: list[Operation] = field(default_factory=list)

    def text(self, *, operations: bool = True, critical: bool = False) -> str:
        """The report as text: totals, roofline, engines, tracks, critical path, passes and (if asked) every
        operation, or (``critical``) the operations of the critical path."""
        ops = self.operations
        lines = [f"  device {self.device}: {len(ops)} operations, {self.makespan} cycles end to end"]
        if self.kernel is not None:
            lines.append(f"    kernel roofline: {self.kernel}")
        lines.append(f"    run roofline:    {self.roofline}")
        if self.engines:
            lines.append(f"    {'engine':<22}{'cycles':>12}")
            for name, cyc in sorted(self.engines.items(), key=lambda kv: -kv[1]):
                lines.append(f"    {name:<22}{cyc:>12}")
        lines.append(f"    {'track':<22}{'busy':>12}{'idle':>12}{'ops':>8}{'critical':>12}")
        for t in self.tracks:
            lines.append(f"    {f'chip {t.chip} {t.track}':<22}{t.busy:>12}{t.idle:>12}{t.ops:>8}{t.critical:>12}")
        if self.critical_path:
            names = " → ".join(f"#{i}" for i in self.critical_path)
            lines.append(f"    critical path: {names}")
            if critical and not operations:
                lines += self._operation_lines([ops[i] for i in self.critical_path], "critical path operation")
        if self.passes:  # whole names, never cut: the column is as wide as the longest
            width = max([36, *(len(p.name) + 1 for p in self.passes)])
            lines.append(f"    {'main pass':<{width + 4}}{'cycles':>10}  roofline")
            for p in self.passes:
                lines.append(f"    #{p.index:<3}{p.name:<{width}}{p.cycles:>10}  {p.roofline}")
        for w in self.warnings:
            lines.append(f"    warning: {w}")
        if operations:
            lines += self._operation_lines(ops, "operation", notes=True)
        return "\n".join(lines)

    @staticmethod
    def _operation_lines(ops: list[Operation], head: str, notes: bool = False) -> list[str]:
        """One line per operation: number, name, track, start, cycles, what it waited for and its source line;
        with ``notes``, each operation's notes below it (a command's cost, a DMA's layout rules, its waits)."""
        width = max([40, *(len(op.name) + 1 for op in ops)])
        lines = [f"    {head:<{width + 4}}{'track':<6}{'start':>10}{'cycles':>10}  waits for"]
        for op in ops:
            waits = ", ".join(f"#{d.op} {'/'.join(d.kinds)}" for d in op.deps)
            at = f"  ({op.source})" if op.source else ""
            lines.append(f"    #{op.index:<3}{op.name:<{width}}{op.track:<6}{op.start:>10}{op.cycles:>10}  {waits}{at}")
            if notes:
                lines += [f"          {n}" for n in op.notes]
        return lines

    def __str__(self) -> str:
        return self.text(operations=False)

    def __repr__(self) -> str:
        return f"<KernelReport {self.device}: {len(self.operations)} operations, {self.makespan} cycles>"

    def _repr_html_(self) -> str:
        """The report in a notebook: totals, rooflines, tracks, passes, the critical path (:mod:`.show`)."""
        from visa.schedule.show import report_html

        return report_html(self)

    def __rich__(self) -> object:
        """The report for ``rich.print``: the summary lines and the tracks table."""
        from visa.schedule.show import report_rich

        return report_rich(self)

    def plot_timeline(self, *, dependencies: bool = True) -> Any:
        """A matplotlib ``Figure`` of the schedule: a row per track, an operation a bar coloured by the context
        that issued it, dependencies as lines, the critical path outlined (:func:`visa.schedule.show.plot_timeline`;
        ``pip install 'tcp-visa[plot]'``)."""
        from visa.schedule.show import plot_timeline

        return plot_timeline(self, dependencies=dependencies)


def _chip_count(ops: list[Operation]) -> int:
    chips: set[int] = set()
    for op in ops:
        chips.update(op.chips)
    return max(1, len(chips))


def roofline(hw: HardwareProfile, ops: list[Operation], cycles: int, chips: int) -> Roofline:
    """The roofline of ``ops`` run in ``cycles`` on ``chips`` chips (module docstring)."""
    macs = 0
    mac_cycles = 0.0
    per_cycle_slices = hw.dm.slices_per_chip * chips
    for op in ops:
        for r in op.engines:
            if r.macs:
                macs += r.macs
                mac_cycles += r.macs / (hw.contraction.macs_per_slice_cycle(r.mac_dtype) * per_cycle_slices)
    nbytes: dict[str, int] = {}
    for op in ops:
        for path, n in op.traffic.items():
            nbytes[path] = nbytes.get(path, 0) + n
    path_cycles = {k: n / bandwidth(hw, k, chips) for k, n in nbytes.items() if n}
    return Roofline(cycles, macs, mac_cycles, nbytes, path_cycles)


def build(hw: HardwareProfile, schedule: Schedule) -> KernelReport:
    """The report of a schedule (:class:`KernelReport`)."""
    ops = schedule.ops
    span = schedule.makespan - schedule.origin  # (after Schedule.fold: the kept operations' span)
    engines: dict[str, int] = {}
    for op in ops:
        for r in op.engines:
            engines[r.engine] = engines.get(r.engine, 0) + r.cycles
    busy: dict[tuple[int, str], list[int]] = {}
    for op in ops:
        for lane in op.lanes:
            got = busy.setdefault(lane, [0, 0])
            got[0] += op.cycles
            got[1] += 1
    path = schedule.critical_path()
    critical: dict[tuple[int, str], int] = {}
    for op in path:
        for lane in op.lanes:
            critical[lane] = critical.get(lane, 0) + op.cycles
    order = {"main": 0, "sub": 1, "pcie": 99}
    tracks = [TrackProfile(c, t, b, span - b, n, critical.get((c, t), 0)) for (c, t), (b, n) in
              sorted(busy.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 2), kv[0][1]))]
    passes = [PassProfile(op.index, op.name, op.start, op.cycles, op.source,
                          roofline(hw, [op], op.cycles, max(1, len(op.chips))))
              for op in ops if op.track == "main"]
    inside = [op for op in ops if op.in_kernel]
    kernel = None
    if inside:
        kernel = roofline(hw, inside, max(op.end for op in inside) - min(op.start for op in inside),
                          _chip_count(inside))
    return KernelReport(hw.name, span, engines, tracks, [op.index for op in path], passes,
                        roofline(hw, ops, span, _chip_count(ops)), kernel, list(schedule.warnings), list(ops))
