"""The typestate of a stream through the Tensor Unit (manual "Memory and Stream", L1094–1161; L3010–3053).

Each stage is its own generic class, so that a method exists only on the stage that has it: plain mypy
already rejects ``.contract()`` on a :class:`FetchTensor`.  The order is the pipeline's
(Fetch → Switch → Collect → Contraction → Vector → Cast → Transpose → Commit, L131, L3792), every engine
after Collect is optional, and a stream value is consumed by the one method called on it.  Code that is not
type-checked gets the same refusal at run time as a :class:`~visa.errors.TypestateError`.

The methods here only check the typestate and delegate to the stream-side module of their engine
(``visa.stream.fetch``, ``.switch``, ``.collect``, ``.contraction``, ``.cast``, ``.transpose``, ``.commit``,
``.vector``), which calls the engine's pure ``plan`` and ``execute``.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from typing_extensions import TypeVar as TypeVarD

from visa import dtypes as dt
from visa.engines.common import EngineReport, StreamData, StreamLayout, replaced
from visa.errors import TypestateError, VisaError
from visa.mapping import Mapping
from visa.validate import expect_dtype, expect_int, expect_mapping

if TYPE_CHECKING:
    from visa.stream.vector import VectorInitTensor
    from visa.tensors.device import Device, TuHandle
    from visa.tensors.handles import DeviceTensor, DmTensor, TrfAddress, TrfTensor, VrfTensor

__all__ = [
    "StreamTensor", "BeginTensor", "FetchTensor", "SwitchTensor", "CollectTensor", "AlignedTensor",
    "ContractionTensor", "AccumulationTensor", "CastTensor", "TransposeTensor", "VectorFinalTensor",
    "AccumulationKind", "ReduceOp", "STAGE_METHODS", "Carried", "did_you_mean", "NoStageMethod",
]

D = TypeVar("D", bound=dt.Scalar)
D2 = TypeVar("D2", bound=dt.Scalar)
Chip = TypeVar("Chip")
Cluster = TypeVar("Cluster")
Slice = TypeVar("Slice")
Time = TypeVar("Time")
Packet = TypeVar("Packet")
Row = TypeVar("Row")
#: The Row of the TRF operand an aligned stream pairs with (the manual's ``AlignedPair<…, Row, Time, Packet>`` and
#: ``ContractionTensor<…, Row, Time, Packet>``, L4305–4317); last and defaulting to Any, so that the six-argument
#: spelling stays valid (PEP 696).  The mypy plugin fills it, so that ``accumulate`` sees the accumulator's rows.
RowD = TypeVarD("RowD", default=Any)


class _Named:
    """A value of one of the manual's small enums, spelled ``Kind.Name`` (its ``name``)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


class AccumulationKind(_Named):
    """How the Reducer accumulates over time (manual ``enum AccumulationKind``, L4318–4324, L4437–4548)."""

    __slots__ = ()
    Interleaved: ClassVar[AccumulationKind]
    Sequential: ClassVar[AccumulationKind]


AccumulationKind.Interleaved = AccumulationKind("Interleaved")
AccumulationKind.Sequential = AccumulationKind("Sequential")


class ReduceOp(_Named):
    """The Reducer's reduce operation (``reduce_op`` of the configuration dumps, L3705; design API.md §8):
    ``ReduceOp.Add`` (reduce-add, the default) or ``ReduceOp.Max`` (reduce-max: Row 0 only, 1/8 of the
    throughput, manual L4393–4395, L4533, L4546)."""

    __slots__ = ()
    Add: ClassVar[ReduceOp]
    Max: ClassVar[ReduceOp]


ReduceOp.Add = ReduceOp("Add")
ReduceOp.Max = ReduceOp("Max")

#: Which stages have each stage method (for the run-time typestate error).
STAGE_METHODS: dict[str, tuple[str, ...]] = {
    "fetch": ("BeginTensor",),
    "fetch_with_table": ("BeginTensor",),
    "fetch_with_zero_point": ("BeginTensor",),
    "fetch_with_zero_points": ("BeginTensor",),
    "fetch_slice_lift": ("FetchTensor",),
    "fetch_cluster_lift": ("FetchTensor",),
    "fetch_chip_lift": ("FetchTensor",),
    "switch": ("FetchTensor",),
    "collect": ("FetchTensor", "SwitchTensor"),
    "to_trf": ("CollectTensor",),
    "to_vrf": ("CollectTensor",),
    "align": ("CollectTensor",),
    "contract": ("AlignedTensor",),
    "accumulate": ("ContractionTensor",),
    "vector_init": ("CollectTensor", "AccumulationTensor"),
    "cast": ("CollectTensor", "AccumulationTensor", "VectorFinalTensor"),
    "transpose": ("FetchTensor", "CollectTensor", "AccumulationTensor", "VectorFinalTensor", "CastTensor"),
    "commit": ("FetchTensor", "SwitchTensor", "CollectTensor", "AccumulationTensor", "VectorFinalTensor",
               "CastTensor", "TransposeTensor"),
    "commit_view": ("FetchTensor", "SwitchTensor", "CollectTensor", "AccumulationTensor", "VectorFinalTensor",
                    "CastTensor", "TransposeTensor"),
}


@dataclass(frozen=True)
class Carried:
    """What a stage hands the next besides its layout and data, typed (each field set by the stage named):

    ``views`` — the DM views the pass fetches (``begin``; the pass's reads); ``interleave`` — the axis of
    ``begin_interleaved``; ``fetch`` — the Fetch Engine's configuration; ``packed`` — the Vector Engine's valid
    counts per row (``vector_final`` after a packing step; the commit reads them); ``contraction`` — the
    Contraction Engine's pass state between ``align``, ``contract`` and ``accumulate``
    (:class:`visa.stream.contraction.ContractionPass`); ``accumulate`` — the accumulator's plan; ``lifts`` — the
    levels a fetch lift has changed (each lifted once); ``seen`` — the write count of each input region when
    the pass first read it (``id(region)`` → ``(region, writes)``; a pass may not end after a write of them);
    ``dual_channel`` — the pass runs in dual channel mode (``begin(view, dual_channel=True)``,
    :mod:`visa.engines.channel`); ``hetero`` — the slice-group axis of ``begin_heterogeneous`` (one view per group).
    """

    views: tuple[Any, ...] = ()
    interleave: Mapping | None = None
    dual_channel: bool = False
    hetero: str | None = None
    fetch: Any = None
    packed: Any = None
    contraction: Any = None
    accumulate: Any = None
    lifts: tuple[str, ...] = ()
    seen: dict[int, tuple[Any, int]] = dataclasses.field(default_factory=dict)

    def with_(self, **changes: Any) -> Carried:
        """A copy with ``changes`` (field names of this class)."""
        return replaced(self, **changes)


class StreamTensor(Generic[D, Chip, Cluster, Slice, Time, Packet]):
    """``StreamTensor<'l, P, D, Chip, Cluster, Slice, Time, Packet>`` (manual L1123): data in flight.

    ``tu`` is the Tensor Unit context (``ctx.main`` or ``ctx.sub``), ``layout`` the dtype and mappings,
    ``data`` the values, ``reports`` what each engine of this pass did, ``inputs`` the memory tensors
    the pass reads (for ready times and overlap checks), and ``carried`` what earlier stages hand on
    (:class:`Carried`).
    """

    __slots__ = ("tu", "layout", "data", "reports", "inputs", "carried", "_used")
    STAGE: ClassVar[str] = "StreamTensor"

    def __init__(self, tu: TuHandle, layout: StreamLayout, data: StreamData,
                 reports: tuple[EngineReport, ...] = (), inputs: tuple[DeviceTensor, ...] = (),
                 carried: Carried | None = None) -> None:
        self.tu = tu
        self.layout = layout
        self.data = data
        self.reports = reports
        self.inputs = inputs
        self.carried: Carried = carried or Carried()
        self._used: str | None = None
        # the write count of each input's bytes when the pass first read it (a stage that reads them again, as
        # fetch does after begin, passes ``seen={}``): the pass may not end after a write of them
        seen = self.carried.seen
        for t in inputs:
            if t.region is not None and id(t.region) not in seen:
                if seen is self.carried.seen:
                    seen = dict(seen)  # (copied once something is added: the carried dict is shared)
                seen[id(t.region)] = (t.region, t.region.writes)
        if seen is not self.carried.seen:
            self.carried = self.carried.with_(seen=seen)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Wrap each stage method so that a refusal leaves the stream unconsumed (see :func:`_keeps_on_refusal`)."""
        super().__init_subclass__(**kwargs)
        for name, fn in list(vars(cls).items()):
            if not name.startswith("_") and name not in _NOT_STAGE_METHODS and inspect.isfunction(fn):
                setattr(cls, name, _keeps_on_refusal(fn))

    # -- the typestate -----------------------------------------------------------------------------------
    def take(self, call: str) -> None:
        """Consume this stream value for ``call``; a second use is a typestate error."""
        if self._used is not None:
            raise TypestateError(f"this {self.STAGE} was already consumed by .{self._used}(); a stream value "
                                 "flows through one engine", call=call, fix="build a second stream with begin()")
        self._used = call

    def then(self, cls: type[S], layout: StreamLayout, data: StreamData, *reports: EngineReport,
             **carried: Any) -> S:
        """The next stage of this pass, carrying its reports, inputs and :class:`Carried` (with ``carried``'s
        fields changed)."""
        data.check(layout)
        kept = self.carried.with_(**carried) if carried else self.carried  # (frozen: shared when unchanged)
        return cls(self.tu, layout, data, self.reports + reports, self.inputs, kept)

    if not TYPE_CHECKING:  # hidden from type checkers, so that they reject a method on the wrong stage

        def __getattr__(self, name: str) -> Any:
            stages = STAGE_METHODS.get(name)
            if name.startswith("_"):
                raise AttributeError(name)
            if stages is None:
                raise NoStageMethod(self, name)
            if name in ("to_trf", "to_vrf") and self.STAGE not in ("BeginTensor", "FetchTensor", "SwitchTensor"):
                # a register-file load takes the Collect Engine's flits (L4055–4061, L280–285): a store after a
                # compute stage would discard the computation (the reference's tightened check, issue 26)
                raise TypestateError(f".{name}() after a {self.STAGE} would discard the computation: a register "
                                     "file is loaded from the Collect Engine's flits (manual L4055–4061, L280–285), "
                                     "not from a compute stage's output", call=name,
                                     fix="commit the result to DM and load the register file from a new pass "
                                         "(begin → fetch → collect → to_trf/to_vrf)")
            raise TypestateError(f".{name}() is not available on a {self.STAGE}; it belongs to "
                                 f"{' / '.join(stages)} (manual pipeline order, L3792)", call=name,
                                 fix="follow the order fetch → switch → collect → align → contract → "
                                     "accumulate → vector → cast → transpose → commit")

    # -- convenience -------------------------------------------------------------------------------------
    @property
    def ctx(self) -> Device:
        """The context (device) the stream runs on."""
        return self.tu.ctx

    @property
    def dtype(self) -> type[dt.Scalar]:
        """The element type ``D`` (L1123)."""
        return self.layout.dtype

    def describe(self) -> str:
        """The stage's type in the manual's notation, e.g. ``FetchTensor[i8, m["1"], ...]`` (L1107–1123)."""
        return self.layout.describe(self.STAGE)

    def __repr__(self) -> str:
        return f"<{self.describe()} on {self.tu!r}>"


S = TypeVar("S", bound=StreamTensor[Any, Any, Any, Any, Any, Any])


class NoStageMethod(AttributeError):
    """A stage method that no stage has; its message (built only when shown: ``getattr(s, name, None)`` stays
    cheap) names the nearest methods (:func:`did_you_mean`)."""

    def __init__(self, stream: StreamTensor[Any, Any, Any, Any, Any, Any], name: str) -> None:
        super().__init__(name, name=name, obj=stream)
        self.stream, self.method = stream, name

    def __str__(self) -> str:
        return did_you_mean(self.stream, self.method)


def did_you_mean(stream: StreamTensor[Any, Any, Any, Any, Any, Any], name: str) -> str:
    """The message for a stage method that exists nowhere: the stage, and the nearest method names of any stage
    (``.vector_fxpp()`` → ``did you mean .vector_fxp()?``)."""
    import difflib

    from visa.stream.vector.base import METHOD_STAGE

    known = {n for n in dir(type(stream)) if not n.startswith("_")} | set(STAGE_METHODS) | set(METHOD_STAGE)
    close = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(f'.{c}()' for c in close)}?" if close else ""
    return f"a {stream.STAGE} has no method .{name}(){hint} (the stage methods: docs, API reference › Streams)"

_NOT_STAGE_METHODS = frozenset({"take", "then", "describe"})


def _argument_checks(fn: Callable[..., Any]) -> dict[str, str]:
    """The parameters of a stage method whose Python type is checked before it runs, by annotation: a
    ``Mapping`` (a bare ``"A"`` refused), an ``int`` (addresses, widths), a ``type[...]`` (element types)."""
    out: dict[str, str] = {}
    for name, note in getattr(fn, "__annotations__", {}).items():
        text = note if isinstance(note, str) else getattr(note, "__name__", "")
        if name == "return":
            continue
        if text == "Mapping":
            out[name] = "mapping"
        elif text == "int":
            out[name] = "int"
        elif text.startswith("type[") and name == "dtype":
            out[name] = "dtype"
    return out


def _check_arguments(sig: inspect.Signature, positional: tuple[str, ...], call: str, checks: dict[str, str],
                     stream: object, args: tuple[Any, ...], kwargs: dict[str, Any],
                     keywords: tuple[frozenset[str], frozenset[str]] | None = None) -> None:
    """Refuse a wrong Python type among a stage call's arguments, naming the parameter (issue 16);
    ``positional`` is :func:`_positional` of ``sig`` (found once per method, not hashed at every call), and
    ``keywords`` :func:`_keywords` of it."""
    if not kwargs and len(args) <= len(positional):  # (the usual call: no binding needed to name them)
        arguments: dict[str, Any] = dict(zip(positional, args, strict=False))
    elif keywords is not None and len(args) == len(positional) and kwargs.keys() <= keywords[0] \
            and keywords[1] <= kwargs.keys():  # (every positional given, keyword-only ones by name: as bound)
        arguments = dict(zip(positional, args, strict=True))
        arguments.update(kwargs)
    else:
        try:
            arguments = sig.bind(stream, *args, **kwargs).arguments
        except TypeError:
            return  # a wrong number of arguments: Python's own message names them
    for name, kind in checks.items():
        if name not in arguments:
            continue
        value = arguments[name]
        if kind == "mapping":
            expect_mapping(value, name, call=call)
        elif kind == "int":
            expect_int(value, name, call=call)
        else:
            expect_dtype(value, name, call=call)


def _positional(sig: inspect.Signature) -> tuple[str, ...]:
    """The names of a stage method's plain positional parameters after ``self``, up to the first that is not."""
    out = []
    for p in list(sig.parameters.values())[1:]:
        if p.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD:
            break
        out.append(p.name)
    return tuple(out)


def _keywords(sig: inspect.Signature, positional: tuple[str, ...]) -> tuple[frozenset[str], frozenset[str]] | None:
    """The keyword-only parameters of a stage method and those of them without a default, when every parameter
    after ``self`` and the ``positional`` ones is keyword-only (a call giving every positional one and keyword-only
    ones by name then binds them as given); else None."""
    rest = list(sig.parameters.values())[1 + len(positional):]
    if any(p.kind is not inspect.Parameter.KEYWORD_ONLY for p in rest):
        return None
    return (frozenset(p.name for p in rest),
            frozenset(p.name for p in rest if p.default is inspect.Parameter.empty))


def _keeps_on_refusal(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A stage method that gives the stream back when it is refused.

    In the manual a stream is moved into the method that consumes it (L1700–1718), and a layout error is a
    compile-time error, so a refused call never consumes anything.  Here the refusal is raised at run time,
    before any engine writes (the plans run first): the stream is left as it was, so a corrected call can
    follow (a notebook, or ``pytest.raises`` then a retry).
    """

    checks = _argument_checks(fn)
    sig = inspect.signature(fn) if checks else None
    positional = _positional(sig) if sig is not None else ()
    keywords = _keywords(sig, positional) if sig is not None else None

    @functools.wraps(fn)
    def method(self: StreamTensor[Any, Any, Any, Any, Any, Any], *args: Any, **kwargs: Any) -> Any:
        before = self._used
        try:
            if sig is not None:
                _check_arguments(sig, positional, fn.__name__, checks, self, args, kwargs, keywords)
            return fn(self, *args, **kwargs)
        except VisaError:
            self._used = before
            raise

    return method


class _Commit(StreamTensor[D, Chip, Cluster, Slice, Time, Packet]):
    """Stages that may be committed to DM (``StreamTensor::commit``, any position P; L2149–2163)."""

    __slots__ = ()

    def commit(self, element: Mapping, address: int, *, valid_count: Any = None
               ) -> DmTensor[D, Chip, Cluster, Slice, Any]:
        """Write the stream to DM at ``address`` as ``DmTensor<D, Chip, Cluster, Slice, Element>`` (L2149);
        ``valid_count`` (sub context: an int, or a one-element i32 DM tensor holding each slice's count) writes only
        the first ``count`` lanes of each packet (valid-count packing, L2322–2324)."""
        import visa.stream.commit as commit

        self.take("commit")
        return commit.commit(self, element, address, valid_count)

    def commit_view(self, view: Any, *, valid_count: Any = None) -> None:
        """Write the stream into an existing DM tensor view (``commit_view``, L2159–2163); ``valid_count`` as
        :meth:`commit` (the discarded lanes keep their bytes)."""
        import visa.stream.commit as commit

        self.take("commit_view")
        commit.commit_view(self, view, valid_count)


class _Transpose(_Commit[D, Chip, Cluster, Slice, Time, Packet]):
    __slots__ = ()

    def transpose(self, time: Mapping, packet: Mapping) -> TransposeTensor[D, Chip, Cluster, Slice, Any, Any]:
        """Transpose Engine: ``transpose::<OutTime, OutPacket>()`` (manual L6820–7041)."""
        import visa.stream.transpose as transpose

        self.take("transpose")
        return transpose.transpose(self, time, packet)


class _Cast(_Transpose[D, Chip, Cluster, Slice, Time, Packet]):
    __slots__ = ()

    def cast(self, dtype: type[D2], packet: Mapping) -> CastTensor[D2, Chip, Cluster, Slice, Time, Any]:
        """Cast Engine: ``cast::<D2, OutPacket>()`` (manual L6756–6819)."""
        import visa.stream.cast as cast

        self.take("cast")
        return cast.cast(self, dtype, packet)


class _Vector(_Cast[D, Chip, Cluster, Slice, Time, Packet]):
    __slots__ = ()

    def vector_init(self) -> VectorInitTensor[D, Chip, Cluster, Slice, Time, Packet]:
        """Enter the Vector Engine (manual L4560–4578); i32 and f32 streams only."""
        import visa.stream.vector as vector

        self.take("vector_init")
        return vector.vector_init(self)


class BeginTensor(StreamTensor[D, Chip, Cluster, Slice, Time, Packet]):
    """``BeginTensor``: a DM tensor at the start of the pipeline (manual L1700–1718)."""

    __slots__ = ()
    STAGE = "BeginTensor"

    def fetch(self, dtype: type[D2], time: Mapping, packet: Mapping, *, pad_value: Any = None
              ) -> FetchTensor[D2, Chip, Cluster, Slice, Any, Any]:
        """Fetch Engine: ``fetch::<D2, Time2, Packet2>()`` (manual L1700–1718); ``pad_value`` (a
        :class:`~visa.engines.fetch.PadValue`) is what masking writes into the padding (zero by default, L1898)."""
        import visa.stream.fetch as fetch

        self.take("fetch")
        return fetch.fetch(self, dtype, time, packet, pad_value=pad_value)

    def fetch_with_table(self, dtype: type[D2], time: Mapping, packet: Mapping, table: Any, *,
                         pad_value: Any = None) -> FetchTensor[D2, Chip, Cluster, Slice, Any, Any]:
        """Fetch through a lookup table (main context, manual L1936–1959).  Masking comes first (L1869–1870): the
        padding takes ``pad_value`` and is then looked up like every element (L1898–1902)."""
        import visa.stream.fetch as fetch

        self.take("fetch_with_table")
        return fetch.fetch(self, dtype, time, packet, table=table, pad_value=pad_value)

    def fetch_with_zero_point(self, dtype: type[D2], time: Mapping, packet: Mapping, zero_point: int, *,
                              pad_value: Any = None) -> FetchTensor[D2, Chip, Cluster, Slice, Any, Any]:
        """Fetch subtracting a zero point (manual L2022–2035).  Masking comes first (L1869–1870): the padding takes
        ``pad_value`` (main context) and has the zero point subtracted like every element (L1898–1902)."""
        import visa.stream.fetch as fetch

        self.take("fetch_with_zero_point")
        return fetch.fetch(self, dtype, time, packet, zero_points=(zero_point,), pad_value=pad_value)

    def fetch_with_zero_points(self, dtype: type[D2], time: Mapping, packet: Mapping, zero_points: tuple[int, int],
                               *, pad_value: Any = None) -> FetchTensor[D2, Chip, Cluster, Slice, Any, Any]:
        """Fetch an interleaved pair, one zero point per tensor (manual L2036–2049); ``pad_value`` as
        :meth:`fetch_with_zero_point`."""
        import visa.stream.fetch as fetch

        self.take("fetch_with_zero_points")
        return fetch.fetch(self, dtype, time, packet, zero_points=tuple(zero_points), pad_value=pad_value)


class FetchTensor(_Transpose[D, Chip, Cluster, Slice, Time, Packet]):
    """``FetchTensor``: the Fetch Engine's output stream (manual L1700–1743)."""

    __slots__ = ()
    STAGE = "FetchTensor"

    def fetch_slice_lift(self, slice_: Mapping, time: Mapping) -> FetchTensor[D, Chip, Cluster, Any, Any, Packet]:
        """Fetch lift (design API.md §8, a reference extension): the fetch's outer Time digits replace a broadcast
        digit of Slice — each replicated copy reads a different time step, no data moves
        (:mod:`visa.engines.lift`).  ``slice_`` is the new Slice, ``time`` the new Time."""
        import visa.stream.fetch as fetch

        self.take("fetch_slice_lift")
        return fetch.lift(self, "Slice", slice_, time)

    def fetch_cluster_lift(self, cluster: Mapping, time: Mapping) -> FetchTensor[D, Chip, Any, Slice, Any, Packet]:
        """As :meth:`fetch_slice_lift`, onto a broadcast digit of Cluster."""
        import visa.stream.fetch as fetch

        self.take("fetch_cluster_lift")
        return fetch.lift(self, "Cluster", cluster, time)

    def fetch_chip_lift(self, chip: Mapping, time: Mapping) -> FetchTensor[D, Any, Cluster, Slice, Any, Packet]:
        """As :meth:`fetch_slice_lift`, onto a broadcast digit of Chip (each chip reads its own copy)."""
        import visa.stream.fetch as fetch

        self.take("fetch_chip_lift")
        return fetch.lift(self, "Chip", chip, time)

    def switch(self, slice_: Mapping, time: Mapping, config: Any) -> SwitchTensor[D, Chip, Cluster, Any, Any, Packet]:
        """Switch Engine: ``switch::<Slice2, Time2>(config)`` (manual L3054–3542)."""
        import visa.stream.switch as switch

        self.take("switch")
        return switch.switch(self, slice_, time, config)

    def collect(self, time: Mapping, packet: Mapping) -> CollectTensor[D, Chip, Cluster, Slice, Any, Any]:
        """Collect Engine (forwarding, no switch): ``collect::<Time2, Packet2>()`` (manual L3076–3084)."""
        import visa.stream.collect as collect

        self.take("collect")
        return collect.collect(self, time, packet)


class SwitchTensor(_Commit[D, Chip, Cluster, Slice, Time, Packet]):
    """``SwitchTensor``: the Switch Engine's output (manual L3066–3075)."""

    __slots__ = ()
    STAGE = "SwitchTensor"

    def collect(self, time: Mapping, packet: Mapping) -> CollectTensor[D, Chip, Cluster, Slice, Any, Any]:
        """Collect Engine: normalise packets into 32-byte flits (manual L3543–3669)."""
        import visa.stream.collect as collect

        self.take("collect")
        return collect.collect(self, time, packet)


class CollectTensor(_Vector[D, Chip, Cluster, Slice, Time, Packet]):
    """``CollectTensor``: flits after the Collect Engine (manual L3543–3669)."""

    __slots__ = ()
    STAGE = "CollectTensor"

    def to_trf(self, row: Mapping, element: Mapping,
               address: TrfAddress) -> TrfTensor[D, Chip, Cluster, Slice, Any, Any]:
        """Load the Tensor Register File (manual L4055–4061): ``TrfTensor<D, Chip, Cluster, Slice, Row, Element>``."""
        import visa.stream.collect as collect

        self.take("to_trf")
        return collect.to_trf(self, row, element, address)

    def to_vrf(self, element: Mapping, address: int) -> VrfTensor[D, Chip, Cluster, Slice, Any]:
        """Load the Vector Register File (manual L280–285, L5063–5081)."""
        import visa.stream.collect as collect

        self.take("to_vrf")
        return collect.to_vrf(self, element, address)

    def align(self, time: Mapping, packet: Mapping, trf: TrfTensor[Any, Any, Any, Any, Row, Any]) -> AlignedTensor[
            D, Chip, Cluster, Slice, Any, Any, Row]:
        """Contraction Engine, Aligner: ``align::<OutTime, OutPacket, _, _>(&trf)`` (manual L3789–4296)."""
        import visa.stream.contraction as contraction

        self.take("align")
        return contraction.align(self, time, packet, trf)


class AlignedTensor(StreamTensor[D, Chip, Cluster, Slice, Time, Packet], Generic[D, Chip, Cluster, Slice, Time, Packet,
                                                                                RowD]):
    """The Aligner's output: the stream paired with the TRF operand, row by row (manual L3889–3896)."""

    __slots__ = ()
    STAGE = "AlignedTensor"

    def contract(self, packet: Mapping, op: ReduceOp = ReduceOp.Add
                 ) -> ContractionTensor[Any, Chip, Cluster, Slice, Time, Any, RowD]:
        """Reducer, spatial: ``contract::<OutPacket>()`` (manual L4310–4436); ``op`` is ``ReduceOp.Add`` or
        ``ReduceOp.Max`` (Row 0 only, L4393–4395, L4533)."""
        import visa.stream.contraction as contraction

        self.take("contract")
        return contraction.contract(self, packet, op)


class ContractionTensor(StreamTensor[D, Chip, Cluster, Slice, Time, Packet],
                        Generic[D, Chip, Cluster, Slice, Time, Packet, RowD]):
    """``ContractionTensor``: products reduced over the packet, per MAC row (manual L4310–4317)."""

    __slots__ = ()
    STAGE = "ContractionTensor"

    def accumulate(self, time: Mapping, packet: Mapping,
                   kind: AccumulationKind) -> AccumulationTensor[D, Chip, Cluster, Slice, Any, Any]:
        """Reducer, temporal: ``accumulate::<OutTime, OutPacket>(kind)`` (manual L4318–4548)."""
        import visa.stream.contraction as contraction

        self.take("accumulate")
        return contraction.accumulate(self, time, packet, kind)


class AccumulationTensor(_Vector[D, Chip, Cluster, Slice, Time, Packet]):
    """``AccumulationTensor``: the Contraction Engine's output (manual L4318–4324)."""

    __slots__ = ()
    STAGE = "AccumulationTensor"


class CastTensor(_Transpose[D, Chip, Cluster, Slice, Time, Packet]):
    """``CastTensor``: after the Cast Engine (manual L6756–6819)."""

    __slots__ = ()
    STAGE = "CastTensor"


class TransposeTensor(_Commit[D, Chip, Cluster, Slice, Time, Packet]):
    """``TransposeTensor``: after the Transpose Engine (manual L6820–7041)."""

    __slots__ = ()
    STAGE = "TransposeTensor"


class VectorFinalTensor(_Cast[D, Chip, Cluster, Slice, Time, Packet]):
    """``VectorFinalTensor``: the Vector Engine's output, a stream again (manual L4975–4976)."""

    __slots__ = ()
    STAGE = "VectorFinalTensor"
