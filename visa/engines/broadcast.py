"""Stream data repeated along Time, kept as the values it repeats (issue 15).

A fetch whose sequencer has a stride-0 loop over Time digits (the GEMM's ``J / 8 % 4``, manual L466–525: the
activation read once per weight column) delivers the same packets again and again.  The hardware reads them
again (its cycles count every time step, L2060); the simulator need not store them again: a
:class:`BroadcastData` holds the *compact* stream — the time steps at digit 0 of every repeating digit — and
the structure of Time as digits, outermost first, each ``(size, repeats)``.  Its ``values`` and ``known`` are
the whole stream, built on first access (a consumer that does not know the structure sees ordinary data);
the engines that know it (Collect, the Aligner, the Reducer) work on the compact arrays and pass the structure
on, so that the Contraction Engine knows from the configuration which activation digits repeat.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from visa.engines.common import LazyData, StreamLayout

__all__ = ["BroadcastData", "TimeDigits", "normal_digits", "expand", "compact_index", "place_values"]

#: Time as digits, outermost first: ``(size, repeats)``; a repeating digit's steps all hold digit 0's data.
TimeDigits = tuple[tuple[int, bool], ...]


def normal_digits(digits: Sequence[tuple[int, bool]]) -> TimeDigits:
    """``digits`` without size-1 digits and with neighbours of the same kind merged (the same structure)."""
    out: list[tuple[int, bool]] = []
    for size, rep in digits:
        if size == 1:
            continue
        if out and out[-1][1] == rep:
            out[-1] = (out[-1][0] * size, rep)
        else:
            out.append((size, rep))
    return tuple(out)


def place_values(sizes: Sequence[int]) -> list[int]:
    """The place value of each digit of a mixed radix, outermost first (the last digit's is 1).

    >>> place_values([2, 3, 4])
    [12, 4, 1]
    """
    out, acc = [0] * len(sizes), 1
    for k in range(len(sizes) - 1, -1, -1):
        out[k] = acc
        acc *= sizes[k]
    return out


def compact_size(digits: TimeDigits) -> int:
    """Time steps the compact stream holds (the product of the digits that do not repeat)."""
    return math.prod(s for s, rep in digits if not rep)


def expand(compact: npt.NDArray[Any], digits: TimeDigits, axis: int = 3) -> npt.NDArray[Any]:
    """The stride-0 view of ``compact`` (its ``axis`` the compact time) with Time split into ``digits``: the
    axis becomes one axis per digit, a repeating digit's stride 0.  No copy."""
    lead, tail = compact.shape[:axis], compact.shape[axis + 1:]
    split = compact.reshape(*lead, *(1 if rep else s for s, rep in digits), *tail)
    return np.broadcast_to(split, (*lead, *(s for s, _ in digits), *tail))


def compact_index(digits: TimeDigits) -> npt.NDArray[np.int64]:
    """For every time step of the whole stream, the compact time step holding its packet."""
    index = np.arange(compact_size(digits), dtype=np.int64)
    return np.ascontiguousarray(expand(index.reshape(1, 1, 1, -1), digits).reshape(-1))


class BroadcastData(LazyData):
    """Stream data ``(Chip, Cluster, Slice, Time, Packet)`` stored as ``compact_values``/``compact_known`` of shape
    ``(Chip, Cluster, Slice, compact time, Packet)`` and ``digits`` (see the module docstring).  ``values`` and
    ``known`` materialise the whole stream once, on first access."""

    def __init__(self, values: npt.NDArray[Any], known: npt.NDArray[np.bool_], digits: Sequence[tuple[int, bool]]
                 ) -> None:
        self.digits: TimeDigits = normal_digits(digits)
        self.compact_values = values
        self.compact_known = known
        assert values.shape[3] == compact_size(self.digits), (values.shape, self.digits)

    @property
    def repeats(self) -> bool:
        """Does any digit repeat (else the compact stream is the stream)?"""
        return any(rep for _, rep in self.digits)

    @property
    def time_size(self) -> int:
        """The whole stream's Time size."""
        return math.prod(s for s, _ in self.digits)

    def _build(self) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_]]:
        """The whole stream: the compact one with its repeating digits as stride-0 views."""
        shape = (*self.compact_values.shape[:3], self.time_size, self.compact_values.shape[4])
        return (expand(self.compact_values, self.digits).reshape(shape),
                expand(self.compact_known, self.digits).reshape(shape))

    def check(self, layout: StreamLayout) -> None:
        """Assert that the data has the layout's shape, without materialising it."""
        c, k, s, t, p = layout.shape
        assert self.time_size == t, (self.digits, layout.shape)
        assert self.compact_values.shape == (c, k, s, compact_size(self.digits), p), (self.compact_values.shape,
                                                                                     layout.shape)
        assert self.compact_known.shape == self.compact_values.shape
