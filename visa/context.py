"""The host side: ``Context``, its engines' contexts, ``@device`` and ``launch`` (manual L36–67, L150–155).

``Context.acquire(hw=RNGD)`` gives exclusive access to a (simulated) device: its memories, the two DMA
contexts ``ctx.pdma`` (host ↔ HBM, PCIe) and ``ctx.tdma`` (HBM ↔ DM), and the two Tensor Unit contexts
``ctx.main`` and ``ctx.sub`` (L150–155).  Every operation is recorded with the bytes it reads and writes and
the resources it occupies (:mod:`visa.schedule`, which holds the rules); :meth:`Context.report` returns the
kernel's profile and roofline and :meth:`Context.trace` the timeline as a Chrome trace.  The host side is
synchronous.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import types
import typing
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from visa import fastpaths
from visa.engines.cache import PLANS
from visa.engines.common import EngineReport
from visa.errors import HardwareLimitError, LayoutError, TypestateError, VisaError
from visa.hw import RNGD, HardwareProfile
from visa.memory.device import DeviceMemory
from visa.memory.footprint import Footprint
from visa.schedule import Lane, Operation, Schedule, dma_lanes, dma_traffic, footprint
from visa.schedule import report as profile
from visa.schedule import trace as tracing
from visa.schedule.footprints import dependencies
from visa.schedule.occupancy import DmOccupancy
from visa.stream import TuContext
from visa.tensors.device import DmaContext
from visa.validate import expect_callable, expect_instance, expect_int, wrong_type

if TYPE_CHECKING:
    from visa.engines.dma.config import DmaPlan
    from visa.mapping import Mapping

__all__ = ["Context", "DmaContext", "TuContext", "EngineReport", "Operation", "Schedule", "device", "launch",
           "acquired_contexts", "holding", "report_all", "reset_acquired", "trace_all", "OBSERVERS"]


_ACQUIRED: list[weakref.ReferenceType[Context]] = []
#: The lists of the open :func:`holding` blocks: each keeps every context acquired inside it alive.
_HELD: list[list[Context]] = []

#: Callables told of every operation as it is scheduled (``visa run`` shows progress with one).
OBSERVERS: list[Callable[[Operation], None]] = []


def acquired_contexts() -> list[Context]:
    """The contexts acquired since the last reset that are still alive (``visa run`` prints their reports).
    Inside a :func:`holding` block every context acquired there stays alive, garbage or not; outside, a context
    nothing refers to any more is freed with its memories (a notebook or a test suite does not keep every device
    it ever made)."""
    return [c for c in (r() for r in _ACQUIRED) if c is not None]


@contextlib.contextmanager
def holding() -> Iterator[list[Context]]:
    """Keep every context acquired inside the block alive until it ends (``visa run`` and ``visa trace`` report
    each device a script made, even one whose last reference went away inside ``main()``); yields them."""
    held: list[Context] = []
    _HELD.append(held)
    try:
        yield held
    finally:
        _HELD.remove(held)


class Context:
    """Exclusive access to a simulated device (manual ``Context::acquire()``, L39)."""

    __slots__ = ("hw", "memory", "pdma", "tdma", "main", "sub", "schedule", "num_chips", "dm_occupancy", "__weakref__")

    def __init__(self, hw: HardwareProfile = RNGD) -> None:
        expect_instance(hw, HardwareProfile, "hw", call="Context.acquire",
                        expected="a HardwareProfile (RNGD or RNGD_S)")
        self.hw = hw
        self.memory = DeviceMemory(hw)
        self.pdma = DmaContext(self, "pdma")
        self.tdma = DmaContext(self, "tdma")
        self.main = TuContext(self, "main")
        self.sub = TuContext(self, "sub")
        self.schedule = Schedule(hw)
        self.num_chips: int | None = None  # the running kernel's chip count (L1079); None on the host
        self.dm_occupancy = DmOccupancy()  # each DM tensor's lifetime on the schedule's clock (the trace's counter)

    @classmethod
    def acquire(cls, hw: HardwareProfile = RNGD) -> Context:
        """A fresh device with the given hardware profile (default RNGD; ``hw=RNGD_S`` for the other)."""
        fastpaths.check_environment()  # a VISA_FASTPATHS name no engine registered is a typo: refuse it here
        ctx = cls(hw)
        _ACQUIRED.append(weakref.ref(ctx))
        for held in _HELD:
            held.append(ctx)
        return ctx

    def record(self, track: str, name: str, engines: Iterable[EngineReport], *, inputs: Iterable[Any] = (),
               reads: Iterable[Any] = (), writes: Iterable[Any] = (), lanes: Iterable[Lane] | None = None,
               cycles: int | None = None, traffic: dict[str, int] | None = None,
               transfer: DmaPlan | None = None, extra_lanes: Iterable[Lane] = (),
               extra_traffic: dict[str, int] | None = None, note: str = "") -> Operation:
        """Schedule an operation (the rules are :meth:`visa.schedule.Schedule.record`'s); returns it, its ``end``
        being the outputs' ready time.

        ``reads`` and ``writes`` are what it touches: tensors, views, tiles, or explicit
        :class:`~visa.memory.footprint.Footprint` / :class:`~visa.memory.footprint.Span` objects; ``inputs``
        (tensors it reads) are added to ``reads``.  ``lanes`` are the ``(chip, resource)`` pairs it occupies
        (default: its track on each chip it touches); ``traffic`` the bytes per roofline path (default: its
        HBM and DM footprints).  A DMA passes its plan as ``transfer``: its lanes are then the engines the plan
        spreads over and the PCIe links it crosses, its traffic the bytes it moves (:mod:`visa.schedule.resources`);
        ``extra_lanes`` and ``extra_traffic`` add what the plan alone does not show (a chip shuffle's PCIe links
        and bytes, L2389, L2845).  ``note`` (a Tensor Unit command's cost breakdown) is kept on the operation.
        """
        reports = tuple(engines)
        rd: Footprint = footprint(*inputs, *reads) + dependencies(*writes)  # (a runtime tile's scalar is read)
        wr: Footprint = footprint(*writes, depends=False)
        if transfer is not None:
            lanes = dma_lanes(self.schedule, transfer, rd, wr) if lanes is None else lanes
            traffic = dma_traffic(transfer, rd, wr) if traffic is None else traffic
        if extra_lanes:
            base = tuple(lanes) if lanes is not None else self.schedule.default_lanes(track, (rd + wr).chip_indices())
            lanes = base + tuple(lane for lane in extra_lanes if lane not in base)
        if extra_traffic:
            traffic = dict(traffic or {})
            for path, nbytes in extra_traffic.items():
                traffic[path] = max(traffic.get(path, 0), nbytes)
        op = self.schedule.record(track, name, reports, reads=rd, writes=wr, lanes=lanes, cycles=cycles,
                                  traffic=traffic, in_kernel=self.num_chips is not None, note=note)
        self.dm_occupancy.note(self.memory.registry, op)
        for observer in OBSERVERS:
            observer(op)
        return op

    def fold(self, first: int) -> None:
        """Keep the record from operation ``first`` on (:meth:`visa.schedule.Schedule.fold`) and the DM lifetimes
        it overlaps: :meth:`report` and :meth:`trace` then describe those operations alone."""
        first = expect_int(first, "first", call="Context.fold")
        self.schedule.fold(first)
        self.dm_occupancy.fold(self.schedule.origin)

    # -- reports -----------------------------------------------------------------------------------------
    def engine_cycles(self) -> dict[str, int]:
        """Total cycles per engine over every operation."""
        out: dict[str, int] = {}
        for op in self.schedule.ops:
            for r in op.engines:
                out[r.engine] = out.get(r.engine, 0) + r.cycles
        return out

    def report(self) -> profile.KernelReport:
        """The kernel's profile: per track busy and idle, the critical path, per main pass and overall the
        roofline (:mod:`visa.schedule.report`); ``str()`` of it is the table ``visa run`` prints."""
        return profile.build(self.hw, self.schedule)

    def report_text(self) -> str:
        """:meth:`report` as text (totals, roofline, engines, tracks, passes and every operation)."""
        return self.report().text()

    def trace(self, pid: int = 0) -> dict[str, Any]:
        """The schedule as a Chrome trace (open it in https://ui.perfetto.dev): device ``pid`` of a run (``visa
        trace`` numbers the devices), a process per chip and a thread per resource (:mod:`visa.schedule.trace`)."""
        return {"traceEvents": tracing.events(self.schedule, self.hw, pid,
                                                      self.dm_occupancy.samples(self.schedule.makespan)),
                "displayTimeUnit": "ns", "otherData": {"clock_hz": self.hw.clocks.core_hz}}

    def __repr__(self) -> str:
        return f"<Context {self.hw.name}: {len(self.schedule.ops)} operations, {self.schedule.makespan} cycles>"

    def _repr_html_(self) -> str:
        """The context in a notebook: its device and, once something ran, its report's tables."""
        if not self.schedule.ops:
            return f"<div style=\"font-family:monospace\"><b>Context {self.hw.name}</b>: nothing ran yet</div>"
        return self.report()._repr_html_()

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


def launch(kernel: Callable[..., R], ctx: Context, *args: Any, out: Any = None) -> R:
    """Run a ``@device`` kernel on the context's device and return its result (manual L56–58).

    ``out=existing`` binds the result to an HBM tensor made earlier (design API.md §8, the reference's
    ``.output(&mut hbm)``): the kernel's result is written there instead of into a new buffer, and ``existing``
    is returned (:mod:`visa.tensors.bound`)."""
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
    if out is not None:
        from visa.tensors.bound import check_out

        check_out(out, ctx, getattr(kernel, "__name__", "the kernel"))
    for a in args:
        check = getattr(a, "levels", None)
        if check is not None and "Chip" in check:
            check_argument_chips(f"argument {a!r}", check["Chip"], chips)
    check_arguments_apart(ctx, args)
    previous = ctx.num_chips
    ctx.num_chips = chips
    PLANS.new_launch()  # the plans this launch uses stay while it runs (the plan caches' byte budget)
    try:
        result = kernel(ctx, *args)
    finally:
        ctx.num_chips = previous  # back on the host: the next launch may use another chip count
    check_result(kernel, result)
    if out is not None:
        from visa.tensors.bound import bind, check_bound

        check_bound(result, out, getattr(kernel, "__name__", "the kernel"))
        bound: R = bind(result, out)
        return bound
    return result


def check_arguments_apart(ctx: Context, args: tuple[Any, ...]) -> None:
    """A kernel's tensor arguments belong to the context it runs on (each context is its own device, L39), and two
    of them may not share bytes unless they are the same handle: a kernel may write any buffer it is given, as
    Rust's ``&mut`` arguments, which cannot alias (issue 23)."""
    from visa.errors import AllocationError
    from visa.schedule.footprints import span_of
    from visa.tensors.handles import DeviceTensor

    spans = []
    for k, a in enumerate(args):
        base = getattr(a, "base", a)
        if not isinstance(base, DeviceTensor):
            continue
        base.check_context(ctx, f"launch (argument {k + 1})")
        span = span_of(a)
        if span is not None:
            spans.append((k, a, span))
    for i, (k, a, sa) in enumerate(spans):
        for j, b, sb in spans[i + 1:]:
            if a is not b and sa.overlaps(sb):
                raise AllocationError(
                    f"arguments {k + 1} ({a!r}) and {j + 1} ({b!r}) share bytes of {sa.memory.upper()}: a kernel may "
                    "write any buffer it is given, so its buffers may not alias", call="launch", level="Element",
                    fix="pass tensors at non-overlapping addresses (or the same handle twice)")


def check_argument_chips(what: str, chip: Mapping, chips: int, call: str = "launch") -> None:
    """A kernel's tensor argument (or parameter annotation) must span the chips the kernel runs on: its Chip
    mapping's size is the ``@device(chip=N)`` count (manual L1079; the mypy plugin checks the same at
    ``launch``, and each parameter's annotation at ``@device``, ``call="device"``)."""
    if chip.size != chips:
        raise LayoutError(f"{what} spans {chip.size} chip(s); the kernel runs on {chips} (manual L1079)",
                          call=call, level="Chip", mapping=repr(chip), axis=", ".join(sorted(chip.axes)) or None,
                          fix=f'lay it out with Chip = m["1 # {chips}"] or an axis of size {chips}, or launch on '
                              f"{chip.size} chip(s)")


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
    from visa.tensors.handles import DeviceTensor, HostTensor

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


def report_all(*, operations: bool = False, critical: bool = False) -> str:
    """The reports of every context acquired since the last :func:`reset_acquired` (``visa run``); each operation
    listed too if ``operations``, the critical path's operations if ``critical`` (``visa run -v``)."""
    return "\n".join(c.report().text(operations=operations, critical=critical) for c in acquired_contexts()
                     if c.schedule.ops)


def trace_all() -> dict[str, Any]:
    """One Chrome trace of every context acquired since the last reset (``visa trace``): device ``d``'s chips
    are processes ``d · 64 + chip + 1``."""
    events = [ev for d, ctx in enumerate(acquired_contexts()) for ev in ctx.trace(pid=d)["traceEvents"]]
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def reset_acquired() -> None:
    """Forget the acquired contexts (``visa run`` does this before each file)."""
    _ACQUIRED.clear()
