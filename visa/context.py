"""The host side: ``Context``, its engines' contexts, ``@device`` and ``launch`` (manual L36–67, L150–155).

``Context.acquire(hw=RNGD)`` gives exclusive access to a (simulated) device: its memories, the two DMA
contexts ``ctx.pdma`` (host ↔ HBM, PCIe) and ``ctx.tdma`` (HBM ↔ DM), and the two Tensor Unit contexts
``ctx.main`` and ``ctx.sub`` (L150–155).  Every operation is recorded on its track with its simulated
cycles; :meth:`Context.report` prints the per-engine cycle table and :meth:`Context.trace` the timeline.
The host side is synchronous (design API.md §1).
"""

from __future__ import annotations

import functools
import inspect
import json
import types
import typing
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from visa.engines.common import EngineReport
from visa.errors import HardwareLimitError, LayoutError, TypestateError, VisaError
from visa.hw import RNGD, HardwareProfile
from visa.memory.device import DeviceMemory
from visa.validate import expect_callable, expect_instance, expect_int, wrong_type

if TYPE_CHECKING:
    from visa.mapping import Mapping
    from visa.memory.tensors import DeviceTensor, DmTensorView
    from visa.stream import BeginTensor

__all__ = ["Context", "DmaContext", "TuContext", "EngineReport", "Operation", "Schedule", "device", "launch",
           "acquired_contexts", "report_all", "reset_acquired"]


@dataclass
class Operation:
    """One operation on one track: a DMA, or a Tensor Unit pipeline pass (fetch … commit); manual
    "Scheduling", L7042–7070."""

    track: str
    name: str
    start: int
    cycles: int
    engines: tuple[EngineReport, ...] = ()

    @property
    def end(self) -> int:
        """The cycle the operation finishes: its outputs are ready then."""
        return self.start + self.cycles


@dataclass
class Schedule:
    """Operations per track (pdma, tdma, main, sub).  An operation starts when its track is free and its
    inputs are ready; a context runs one operation at a time (manual L2930, "Scheduling", L7042)."""

    ops: list[Operation] = field(default_factory=list)
    free_at: dict[str, int] = field(default_factory=dict)

    def record(self, track: str, name: str, engines: Iterable[EngineReport], *, ready: int = 0,
               cycles: int | None = None) -> Operation:
        """Add an operation; its cycles are the slowest engine's plus the others' latencies (a pipeline)."""
        reports = tuple(engines)
        if cycles is None:
            cycles = max((r.cycles for r in reports), default=0) + sum(r.latency for r in reports)
        start = max(self.free_at.get(track, 0), ready)
        op = Operation(track, name, start, cycles, reports)
        self.ops.append(op)
        self.free_at[track] = op.end
        return op

    @property
    def makespan(self) -> int:
        """Cycles from the first operation's start to the last one's end."""
        return max((op.end for op in self.ops), default=0)


class DmaContext:
    """``ctx.pdma`` (PCIe: host ↔ HBM) or ``ctx.tdma`` (tensor DMA: HBM/SPM ↔ DM; manual L44–47)."""

    __slots__ = ("ctx", "kind")

    def __init__(self, ctx: Context, kind: str) -> None:
        self.ctx = ctx
        self.kind = kind

    def __repr__(self) -> str:
        return f"ctx.{self.kind}"


class TuContext:
    """``ctx.main`` or ``ctx.sub``: a Tensor Unit execution context (manual L150–155, L3046–3053)."""

    __slots__ = ("ctx", "kind")

    def __init__(self, ctx: Context, kind: str) -> None:
        self.ctx = ctx
        self.kind = kind

    def begin(self, view: DmTensorView) -> BeginTensor[Any, Any, Any, Any, Any, Any]:
        """Start a stream from a DM tensor view: Time ``m["1"]``, Packet = the view's Element (L1701)."""
        from visa.stream import begin

        return begin(self, view)

    def begin_interleaved(self, axis: Mapping, lhs: DmTensorView,
                          rhs: DmTensorView) -> BeginTensor[Any, Any, Any, Any, Any, Any]:
        """Interleave two tensors with identical mappings along a new Time axis ``axis`` of size 2 (L1843–1868)."""
        from visa.stream import begin_interleaved

        return begin_interleaved(self, axis, lhs, rhs)

    def __repr__(self) -> str:
        return f"ctx.{self.kind}"


_ACQUIRED: list[weakref.ReferenceType[Context]] = []


def acquired_contexts() -> list[Context]:
    """Contexts acquired since the last reset (``visa run`` prints their reports, design API.md §6)."""
    return [c for c in (r() for r in _ACQUIRED) if c is not None]


class Context:
    """Exclusive access to a simulated device (manual ``Context::acquire()``, L39)."""

    __slots__ = ("hw", "memory", "pdma", "tdma", "main", "sub", "schedule", "num_chips", "__weakref__")

    def __init__(self, hw: HardwareProfile = RNGD) -> None:
        expect_instance(hw, HardwareProfile, "hw", call="Context.acquire",
                        expected="a HardwareProfile (RNGD or RNGD_S)")
        self.hw = hw
        self.memory = DeviceMemory(hw)
        self.pdma = DmaContext(self, "pdma")
        self.tdma = DmaContext(self, "tdma")
        self.main = TuContext(self, "main")
        self.sub = TuContext(self, "sub")
        self.schedule = Schedule()
        self.num_chips: int | None = None  # the running kernel's chip count (L1079); None on the host

    @classmethod
    def acquire(cls, hw: HardwareProfile = RNGD) -> Context:
        """A fresh device with the given hardware profile (default RNGD; ``hw=RNGD_S`` for the other)."""
        ctx = cls(hw)
        _ACQUIRED.append(weakref.ref(ctx))
        return ctx

    def record(self, track: str, name: str, engines: Iterable[EngineReport], *,
               inputs: Iterable[DeviceTensor | None] = (), cycles: int | None = None) -> Operation:
        """Schedule an operation after its inputs are ready; returns it (its ``end`` is the outputs' ready time)."""
        ready = max((t.ready_at for t in inputs if t is not None), default=0)
        return self.schedule.record(track, name, engines, ready=ready, cycles=cycles)

    # -- reports -----------------------------------------------------------------------------------------
    def engine_cycles(self) -> dict[str, int]:
        """Total cycles per engine over every operation."""
        out: dict[str, int] = {}
        for op in self.schedule.ops:
            for r in op.engines:
                out[r.engine] = out.get(r.engine, 0) + r.cycles
        return out

    def report(self) -> str:
        """A per-engine and per-track cycle table, followed by the operations in order."""
        lines = [f"  device {self.hw.name}: {len(self.schedule.ops)} operations, "
                 f"{self.schedule.makespan} cycles end to end"]
        per_engine = self.engine_cycles()
        if per_engine:
            lines.append(f"    {'engine':<22}{'cycles':>12}")
            for name, cyc in sorted(per_engine.items(), key=lambda kv: -kv[1]):
                lines.append(f"    {name:<22}{cyc:>12}")
        tracks: dict[str, int] = {}
        for op in self.schedule.ops:
            tracks[op.track] = tracks.get(op.track, 0) + op.cycles
        lines.append(f"    {'track':<22}{'busy':>12}")
        for name, busy in tracks.items():
            lines.append(f"    {name:<22}{busy:>12}")
        lines.append(f"    {'operation':<40}{'track':<8}{'start':>10}{'cycles':>10}")
        for op in self.schedule.ops:
            lines.append(f"    {op.name[:39]:<40}{op.track:<8}{op.start:>10}{op.cycles:>10}")
        return "\n".join(lines)

    def trace(self, pid: int = 0) -> dict[str, Any]:
        """The schedule as a Chrome trace (open in Perfetto): the device is process ``pid`` (``visa trace``
        numbers the devices of a run), with one row per track and one slice per operation (L7042–7070)."""
        events: list[dict[str, Any]] = [{"name": "process_name", "ph": "M", "pid": pid,
                                         "args": {"name": f"device {pid} ({self.hw.name})"}}]
        tids = {name: k for k, name in enumerate(["pdma", "tdma", "main", "sub"])}
        for op in self.schedule.ops:
            tid = tids.setdefault(op.track, len(tids))
            events.append({"name": op.name, "ph": "X", "pid": pid, "tid": tid, "ts": op.start, "dur": op.cycles,
                           "args": {r.engine: f"{r.config} ({r.cycles} cycles)" for r in op.engines}})
        for name, tid in tids.items():
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}})
        return {"traceEvents": events, "displayTimeUnit": "ns"}

    def write_trace(self, path: str) -> None:
        """Write :meth:`trace` as JSON."""
        with open(path, "w") as fh:
            json.dump(self.trace(), fh)


P = ParamSpec("P")
R = TypeVar("R")


def device(chip: int = 1) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """``#[device(chip = N)]``: mark a kernel that runs on ``chip`` chips (manual L59)."""
    chip = expect_int(chip, "chip", call="device", fix="write @device(chip=1) for a one-chip kernel")
    if chip <= 0:
        raise VisaError(f"a kernel runs on at least one chip, got chip={chip}", call="device", level="Chip",
                        fix="write @device(chip=1) for a one-chip kernel")

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        expect_callable(fn, "kernel", call="device")

        @functools.wraps(fn)
        def inner(*args: P.args, **kwargs: P.kwargs) -> R:
            return fn(*args, **kwargs)

        inner.__visa_chips__ = chip  # type: ignore[attr-defined]
        return inner

    return wrap


def launch(kernel: Callable[..., R], ctx: Context, *args: Any) -> R:
    """Run a ``@device`` kernel on the context's device and return its result (manual L56–58)."""
    expect_callable(kernel, "kernel", call="launch")
    expect_instance(ctx, Context, "ctx", call="launch", expected="a Context (Context.acquire())")
    chips = getattr(kernel, "__visa_chips__", None)
    if chips is None:
        raise TypestateError(f"{getattr(kernel, '__name__', kernel)} is not a @device kernel", call="launch",
                             fix="decorate it with @device(chip=1)")
    if ctx.hw.max_chips and chips > ctx.hw.max_chips:
        raise HardwareLimitError(f"the kernel needs {chips} chips; {ctx.hw.name} systems have at most "
                                 f"{ctx.hw.max_chips} (manual L129, L1075)", call="launch", level="Chip",
                                 fix=f"split the work over at most {ctx.hw.max_chips} chips")
    try:
        inspect.signature(kernel).bind(ctx, *args)
    except TypeError as err:
        name = getattr(kernel, "__name__", "the kernel")
        raise TypestateError(f"{name}{inspect.signature(kernel)} cannot take these {len(args)} argument(s) after "
                             f"the context: {err}", call="launch",
                             fix=f"pass exactly the arguments {name} takes after ctx") from None
    for a in args:
        check = getattr(a, "levels", None)
        if check is not None and "Chip" in check and check["Chip"].size != chips:
            raise LayoutError(f"argument {a!r} spans {check['Chip'].size} chips; the kernel runs on {chips} "
                              "(manual L1079)", call="launch", level="Chip", mapping=repr(check["Chip"]),
                              axis=", ".join(sorted(check["Chip"].axes)) or None,
                              fix=f'lay the argument out with Chip = m["1 # {chips}"] or an axis of size {chips}')
    previous = ctx.num_chips
    ctx.num_chips = chips
    try:
        result = kernel(ctx, *args)
    finally:
        ctx.num_chips = previous  # back on the host: the next launch may use another chip count
    check_result(kernel, result)
    return result


def check_result(kernel: Callable[..., Any], result: object) -> None:
    """Refuse a kernel's result that does not match its return annotation (issue 16): the class (``None``,
    ``int``, ``HbmTensor`` …), and for a tensor annotated with parameters its dtype and level mappings where they
    are written (``HbmTensor[bf16, m["1"], m["I"]]``; ``Any`` and type variables match anything).  An annotation
    that cannot be evaluated at run time (a name local to a function, under ``from __future__ import
    annotations``) is left to the mypy plugin."""
    name = getattr(kernel, "__name__", "the kernel")
    target = inspect.unwrap(kernel)
    try:
        hints = inspect.get_annotations(target, eval_str=True)
    except Exception:  # an annotation that names something this scope cannot see
        return
    if "return" not in hints:
        return
    _check_value(hints["return"], result, f"{name}'s result", name)


def _check_value(want: Any, got: object, what: str, name: str) -> None:
    from visa import dtypes as dt
    from visa.mapping import Mapping
    from visa.memory.layout import LEVELS
    from visa.memory.tensors import DeviceTensor, HostTensor

    if want is None or want is type(None):
        if got is not None:
            raise wrong_type("return", got, "None", call="launch", fix=f"{name} is annotated -> None: return nothing")
        return
    if want is Any or isinstance(want, TypeVar) or isinstance(want, str):
        return
    origin = typing.get_origin(want)
    args = typing.get_args(want)
    if origin in (typing.Union, types.UnionType):
        for option in args:
            try:
                _check_value(option, got, what, name)
                return
            except VisaError:
                continue
        raise wrong_type("return", got, str(want), call="launch", fix=f"return what {name} is annotated with")
    if origin is tuple and isinstance(got, tuple):
        if len(args) == 2 and args[1] is Ellipsis:
            args = (args[0],) * len(got)
        if len(args) != len(got):
            raise wrong_type("return", got, f"a tuple of {len(args)}", call="launch")
        for k, (a, g) in enumerate(zip(args, got, strict=True)):
            _check_value(a, g, f"{what}[{k}]", name)
        return
    cls = origin if isinstance(origin, type) else want
    if not isinstance(cls, type):
        return  # Literal, Callable[...] and other typing forms: left to the type checker
    if not isinstance(got, cls):
        raise wrong_type("return", got, f"{_type_text(want)} ({what}, as annotated)", call="launch",
                         fix=f"return a {cls.__name__}, or fix {name}'s return annotation")
    if not args or not isinstance(got, DeviceTensor | HostTensor):
        return
    dtype, maps = args[0], args[1:]
    if isinstance(dtype, type) and issubclass(dtype, dt.Scalar) and got.dtype is not dtype:
        raise dt.DtypeError(f"{what} is {got!r}, but {name} is annotated to return {dtype!r} elements",
                            call="launch", fix=f"cast to {dtype!r} before returning, or fix the annotation")
    levels = LEVELS[got.MEMORY] if isinstance(got, DeviceTensor) else ("Element",)
    have = got.levels if isinstance(got, DeviceTensor) else {"Element": got.element}
    for level, want_map in zip(levels, maps, strict=False):
        if isinstance(want_map, Mapping) and have[level] != want_map:
            raise LayoutError(f"{what} has {level} {have[level]!r}, but {name} is annotated with {want_map!r}",
                              call="launch", level=level, mapping=repr(have[level]),
                              fix=f"lay the result out as {want_map!r}, or fix the annotation")


def _type_text(want: Any) -> str:
    return getattr(want, "__name__", None) or repr(want)


def report_all() -> str:
    """The reports of every context acquired since the last :func:`reset_acquired` (``visa run``, design API.md
    §6)."""
    return "\n".join(c.report() for c in acquired_contexts() if c.schedule.ops)


def reset_acquired() -> None:
    """Forget the acquired contexts (``visa run`` does this before each file, design API.md §6)."""
    _ACQUIRED.clear()
