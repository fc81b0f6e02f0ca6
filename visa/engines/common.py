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

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa.mapping import Mapping

__all__ = ["StreamLayout", "StreamData", "EngineReport", "STREAM_LEVELS"]

STREAM_LEVELS = ("Chip", "Cluster", "Slice", "Time", "Packet")


@dataclass(frozen=True)
class EngineReport:
    """What one engine did in one operation: its configuration (in the manual's notation) and its cycles.

    ``latency`` is the fill latency the engine adds to a pipeline pass (a pass costs its slowest engine's
    cycles plus every engine's latency).
    """

    engine: str
    config: str
    cycles: int
    latency: int = 0
    details: tuple[tuple[str, object], ...] = ()

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
        return replace(self, **changes)

    @property
    def shape(self) -> tuple[int, int, int, int, int]:
        return (self.chip.size, self.cluster.size, self.slice.size, self.time.size, self.packet.size)

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
    """The values of a stream and which of them are known (see the module docstring)."""

    values: npt.NDArray[Any]
    known: npt.NDArray[np.bool_]

    @classmethod
    def poison(cls, layout: StreamLayout) -> StreamData:
        """All-unknown data of the layout's shape."""
        return cls(np.zeros(layout.shape, dtype=layout.dtype.storage), np.zeros(layout.shape, dtype=bool))

    def check(self, layout: StreamLayout) -> None:
        """Assert that the data has the layout's shape (an engine bug otherwise)."""
        assert self.values.shape == layout.shape, (self.values.shape, layout.shape)
        assert self.known.shape == layout.shape
