"""What every Tensor Unit engine consumes and produces: a stream's layout and its data.

A stream tensor (manual "Tensor Unit Stream", L1094–1151) is a dtype and five mappings — Chip, Cluster,
Slice, Time, Packet — plus, in the simulator, its values: one array of shape
``(Chip.size, Cluster.size, Slice.size, Time.size, Packet.size)`` in the dtype's storage type, and a
``known`` mask of the same shape that is False where a value is poison (never written, or padding that no
stage masked).  Element ``[c, k, s, t, p]`` holds ``T`` at
``Chip.map(c) ∪ Cluster.map(k) ∪ Slice.map(s) ∪ Time.map(t) ∪ Packet.map(p)``.

Engines are pure: ``plan(...)`` derives the hardware configuration (or raises the rule's error) from
dtypes and mappings only, ``execute(plan, data)`` runs that configuration, ``cycles(plan)`` costs it.  The
stream classes in :mod:`visa.stream` call them; the mypy plugin calls the same ``plan`` functions.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa.errors import TypestateError
from visa.hw import HardwareProfile
from visa.mapping import Mapping
from visa.mapping.fast_validity import validity_of

__all__ = ["StreamLayout", "StreamData", "LazyData", "EngineReport", "STREAM_LEVELS", "axes_text", "engine_call",
           "replaced", "unit_validity", "refuse_in_sub_context", "divisors", "kept_text"]

STREAM_LEVELS = ("Chip", "Cluster", "Slice", "Time", "Packet")


def axes_text(mapping: Mapping | None) -> str | None:
    """The axes ``mapping`` sets, sorted and comma-separated: a refusal's ``axis=`` when the whole mapping is at
    fault (None when there is no mapping or it sets no axis, manual "Mapping", L582–620)."""
    if mapping is None:
        return None
    return ", ".join(sorted(mapping.axes)) or None


def engine_call(engine: str, stage: str, context: str = "main") -> str:
    """A refusal's ``call=``: the engine and its stage (``"fetch sequencer"``), marked when it runs in the sub
    context, whose engines have their own limits (manual L150–155, L3046–3052)."""
    return f"{engine} {stage}" + (" (sub context)" if context == "sub" else "")


def refuse_in_sub_context(hw: HardwareProfile, context: str, engine: str, call: str, level: str | None = None) -> None:
    """Refuse a compute engine (``engine``, e.g. ``"Cast Engine"``) in the sub context (``context`` is ``"main"``
    or ``"sub"``): the sub context has no compute engines (L3046–3051) and its commits follow fetch only (L2337).
    Pure (the engines' ``check_context``, and so the stream and the mypy plugin, call it)."""
    if context == "sub" and hw.commit.sub_follows_fetch_only:
        raise TypestateError(
            "the sub context has no compute engines (L3046–3051) and its commits follow fetch only, never the "
            f"{engine} (manual L2337)", call=call, level=level, fix=f"{call} on ctx.main")


def divisors(n: int) -> list[int]:
    """The divisors of ``n`` in ascending order: the ways a configuration can split a loop of ``n`` (a packet
    out of a contiguous run, L2424–2428; rows and columns out of the input flits, L6841–6856)."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


T = TypeVar("T")


def replaced(value: T, **changes: Any) -> T:
    """``dataclasses.replace(value, **changes)`` for a frozen dataclass without ``__post_init__`` or init-only
    fields: a new value with the same fields but ``changes``, built field by field (``replace`` goes through the
    generated ``__init__``, several µs; a stage makes a few such copies).  Only the fields are copied: nothing
    else the old value keeps in its ``__dict__`` (a memoised key, :mod:`visa.engines.cache`) carries over."""
    got = _FIELDS.get(type(value))
    if got is None:
        names = tuple(f.name for f in fields(value))  # type: ignore[arg-type]
        got = _FIELDS[type(value)] = (names, frozenset(names))
    names, known = got
    if not known.issuperset(changes):
        raise TypeError(f"{type(value).__name__} has no field {sorted(changes.keys() - known)[0]!r}")
    old = value.__dict__
    out = object.__new__(type(value))
    new = out.__dict__
    for n in names:  # (the fields only: not what the old value keeps besides, a memoised key)
        new[n] = old[n]
    new.update(changes)
    return out


_FIELDS: dict[type, tuple[tuple[str, ...], frozenset[str]]] = {}


def kept_text(method: Callable[[T], str]) -> Callable[[T], str]:
    """A frozen configuration's ``__str__`` (the text its engine report carries on every pass) made once and kept
    on the value (in its ``__dict__``, not a field: ``==`` and the plan caches' keys ignore it; a copy made by
    :func:`replaced` or ``dataclasses.replace`` starts without it): its fields never change, nor does the text."""

    @functools.wraps(method)
    def inner(self: T) -> str:
        memo: dict[str, Any] = self.__dict__
        text: str | None = memo.get(_TEXT)
        if text is None:
            text = memo[_TEXT] = method(self)
        return text

    return inner


_TEXT = "_visa_text"


def unit_validity(chip: Mapping, cluster: Mapping, slice_: Mapping) -> npt.NDArray[np.bool_]:
    """``(Chip, Cluster, Slice)`` array: True where every level holds an index, the units a stream or tensor
    occupies (the others are padding: the slice bitmap leaves them out, manual L2314–2319)."""
    out: npt.NDArray[np.bool_] = (validity_of(chip)[:, None, None] & validity_of(cluster)[None, :, None]
                                  & validity_of(slice_)[None, None, :])
    return out


@dataclass(frozen=True)
class EngineReport:
    """What one engine did in one operation: its configuration (in the manual's notation) and its cycles.

    ``latency`` is the fill latency the engine adds to a pipeline pass (a pass costs its slowest engine's
    cycles plus every engine's latency).  ``nbytes`` is the bytes the engine moved to or from memory (DMA,
    fetch, commit, register-file loads), ``macs`` the multiply-accumulates it performed in ``mac_dtype``
    (the Contraction Engine), ``bank_run`` its longest run of consecutive accesses to one DM bank and
    ``bank_runs`` that run for each of the 16 banks (fetch and commit; the bank-starvation rule,
    L2897–2941).  ``hbm_channels`` are a DMA's busy cycles per HBM channel
    (``(chip · channels + channel, cycles)``), which the schedule reserves so that DMAs running at once share the
    channels.  The schedule's roofline adds them up.
    """

    engine: str
    config: str
    cycles: int
    latency: int = 0
    details: tuple[tuple[str, object], ...] = ()
    nbytes: int = 0
    macs: int = 0
    mac_dtype: str = ""
    bank_run: int = 0
    bank_runs: tuple[int, ...] = ()
    hbm_channels: tuple[tuple[int, float], ...] = ()

    def __str__(self) -> str:
        return f"{self.engine}: {self.config} ({self.cycles} cycles)"


@dataclass(frozen=True)
class StreamLayout:
    """A stream's dtype and its five level mappings (the type parameters of ``StreamTensor``, L1123)."""

    dtype: type[dt.Scalar]
    chip: Mapping
    cluster: Mapping
    slice: Mapping
    time: Mapping
    packet: Mapping

    def level(self, name: str) -> Mapping:
        """The mapping of one level by its manual name."""
        return {"Chip": self.chip, "Cluster": self.cluster, "Slice": self.slice, "Time": self.time,
                "Packet": self.packet}[name]

    def with_(self, **changes: Any) -> StreamLayout:
        """A copy with some fields replaced (``dtype=``, ``time=``, ``packet=``, ...)."""
        return replaced(self, **changes)

    @property
    def shape(self) -> tuple[int, int, int, int, int]:
        """The data's shape: the five level sizes (``Chip::SIZE``, ..., ``Packet::SIZE``, L1123); found once (a
        layout never changes; every stage of a pass checks its data against it) and kept beside the fields (not
        one of them: ``==``, the hash and :func:`replaced` ignore it)."""
        memo = self.__dict__
        got: tuple[int, int, int, int, int] | None = memo.get("_shape")
        if got is None:
            got = memo["_shape"] = (self.chip.size, self.cluster.size, self.slice.size, self.time.size,
                                    self.packet.size)
        return got

    @property
    def packet_bytes(self) -> int:
        """Bytes of one packet (``D::size_in_bytes_from_length(Packet::SIZE)``, L1711)."""
        return (self.packet.size * self.dtype.size_bits + 7) // 8

    def describe(self, stage: str = "StreamTensor") -> str:
        """``FetchTensor[i32, m["1"], m["1 # 2"], m["A / 8 # 256"], m["1"], m["A % 8"]]``."""
        parts = ", ".join([repr(self.dtype), *(repr(self.level(n)) for n in STREAM_LEVELS)])
        return f"{stage}[{parts}]"


@dataclass
class StreamData:
    """The values of a stream and which of them are known (manual L1094–1151; see the module docstring).

    ``replicas``, when not None, labels the ``(Chip, Cluster, Slice)`` positions (flat): positions of equal
    non-negative labels hold the same values and the same known-mask, because their bytes were written as
    copies of one source (:mod:`visa.memory.replicas`).  A stage that treats every slice alike passes it on;
    any other leaves it None (nothing known, which is always right).
    """

    values: npt.NDArray[Any]
    known: npt.NDArray[np.bool_]
    replicas: npt.NDArray[np.int64] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def poison(cls, layout: StreamLayout) -> StreamData:
        """All-unknown data of the layout's shape."""
        return cls(np.zeros(layout.shape, dtype=layout.dtype.storage), np.zeros(layout.shape, dtype=bool))

    def check(self, layout: StreamLayout) -> None:
        """Assert that the data has the layout's shape (an engine bug otherwise)."""
        shape = layout.shape
        assert self.values.shape == shape, (self.values.shape, shape)
        assert self.known.shape == shape


class LazyData(StreamData):
    """Stream data whose values — and, unless given, its known-mask — are built on first access (issue 15): a
    subclass keeps a structure the engines that know it work on (a Time broadcast, rows left copies, a fused
    product, an operation not yet run) and says in :meth:`_build` how to make the whole stream from it.  A
    consumer that does not know the structure reads ``values`` and ``known`` as ordinary data."""

    _values: npt.NDArray[Any] | None = None
    _known: npt.NDArray[np.bool_] | None = None

    def _build(self) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_] | None]:
        """The whole stream's values and known-mask (None, or ignored, when the known-mask was given)."""
        raise NotImplementedError

    def _made(self) -> bool:
        """Have the values been built (or set)?"""
        return self._values is not None

    def _get(self) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_]]:
        if self._values is None:
            values, known = self._build()
            self._values = values
            if self._known is None:
                self._known = known
        assert self._known is not None
        return self._values, self._known

    @property
    def values(self) -> npt.NDArray[Any]:
        """The whole stream's values (built on first access)."""
        return self._get()[0]

    @values.setter
    def values(self, value: npt.NDArray[Any]) -> None:
        if self._known is None:  # (a known-mask still to be built is built from the structure first)
            self._get()
        self._values = value

    @property
    def known(self) -> npt.NDArray[np.bool_]:
        """The whole stream's poison mask (built on first access, unless given)."""
        return self._known if self._known is not None else self._get()[1]

    @known.setter
    def known(self, value: npt.NDArray[np.bool_]) -> None:
        if self._values is None and self._known is None:
            self._get()
        self._known = value
