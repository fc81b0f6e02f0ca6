"""A slice chosen on a DMA's source, fused with a shuffle into one DMA (design API.md §8; the reference's
``chip_shuffle(p).chip_slice::<Axis, Output>(…)``, furiosa-opt v0.8 — a reference extension,
docs/manual-notes.md "issue 26").

``t.view().chip_shuffle(p).chip_slice(m["B"], m["C, D"], indices)`` stages a tensor whose chip ``c`` holds
entry ``indices[c]`` of the digit ``B`` of what it held (after the shuffle): its Element is the declared
``m["C, D"]``, the source's without the digit.  ``cluster_slice`` does the same per cluster.  The move that
follows (``.to_dm(...)``, ``.to_dm_view(...)``) is one DMA whose source base, on each chip (cluster), is moved to
the kept entry: the digit becomes a padding digit of the read layout (held at 0) and the entry an offset of
``indices[u] × the digit's stride``.  Unlike an asymmetric slice (ParallelCopy, manual L7603–7606), the digit
may sit anywhere in the Element, since the DMA's read sequencer takes any stride.

:func:`plan_slice` holds the rules (shared with the mypy plugin): the digit is one unpadded digit of one axis
the staged Element holds (:func:`visa.engines.parallel_copy.split_digit`), the declared Element is the Element
without it (by equivalence), one constant index per chip (cluster) inside the digit, a chip slice over
several chips and a cluster slice over the chip's clusters of a DM source, and — a tightened check of the
reference — a slice producing DM needs the digit's stride to be a whole number of 8-byte words (the per-unit
base is an 8-byte aligned DM address, L2424–2427).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from visa import dtypes as dt
from visa.engines.parallel_copy import check_dm_stride, check_indices, split_digit
from visa.errors import AddressError, LayoutError, TypestateError
from visa.hw import HardwareProfile
from visa.mapping import Mapping
from visa.mapping import canon as C
from visa.mapping.evaluate import digit_weights

__all__ = ["SliceStep", "plan_slice", "check_constant_indices", "check_dm_stride"]


@dataclass(frozen=True)
class SliceStep:
    """One staged slice: ``which`` (``"chip"`` or ``"cluster"``), the ``layout`` of the source bytes afterwards
    (the digit a padding digit held at 0), the declared ``element``, and the byte ``offsets`` unit ``u`` reads at
    (``indices[u] × stride``); ``stride_bytes`` is the digit's stride."""

    which: str
    digit: Mapping
    layout: Mapping
    element: Mapping
    indices: tuple[int, ...]
    offsets: tuple[int, ...]
    stride_bytes: int


def check_constant_indices(values: object, param: str, call: str) -> None:
    """Redistribution indices (a shuffle's permutation, a slice's indices) are constants of the kernel: a device
    scalar or an expression on one is refused (a tightened check of the reference, furiosa-opt v0.8)."""
    items = list(values) if isinstance(values, list | tuple | range) else [values]
    for v in items:
        if type(v).__name__ in ("HbmScalar", "SpmScalar", "ScalarExpr"):
            raise TypestateError(f"{param} must be constants: {v!r} is a runtime value, and a redistribution's "
                                 "sources are fixed when the DMA is built", call=call,
                                 fix=f"pass {param} as ints; guard alternatives with ctx.main.when(...)")


def plan_slice(hw: HardwareProfile, dtype: type[dt.Scalar], layout: Mapping, element: Mapping, digit: Mapping,
               out: Mapping, indices: Sequence[object], which: str, units: int, medium: str, *,
               dst_medium: str | None = None, call: str) -> SliceStep:
    """One ``chip_slice`` / ``cluster_slice`` on a staged source whose read ``layout`` and declared ``element``
    are given, over ``units`` chips (clusters) of a ``medium`` source (pure; raises the rule)."""
    level = "Chip" if which == "chip" else "Cluster"
    check_constant_indices(indices, "indices", call)
    if which == "cluster" and medium != "dm":
        raise LayoutError(f"a cluster slice keeps a different entry on each cluster of a DM tensor; an "
                          f"{medium.upper()} tensor has no Cluster level (manual L1064)", call=call, level="Cluster",
                          fix="slice a DM view, or use chip_slice")
    if which == "chip" and units <= 1:
        raise LayoutError("a chip slice keeps a different entry on every chip, and this tensor has one chip",
                          call=call, level="Chip", fix="run the kernel on several chips, or take a tile instead")
    if which == "cluster" and units != hw.dm.clusters_per_chip:
        raise LayoutError(f"a cluster slice needs the tensor's Cluster over the chip's {hw.dm.clusters_per_chip} "
                          f"clusters; its Cluster has size {units}", call=call, level="Cluster",
                          fix=f"lay the tensor out with a Cluster of size {hw.dm.clusters_per_chip}")
    logical, at_l, size, _ = split_digit(element, digit, call)
    kept = tuple(d for k, d in enumerate(logical) if k != at_l)
    want = Mapping.from_canon(kept, element.axis_set) if kept else Mapping.identity(element.axis_set)
    if out != want:
        raise LayoutError(f"the Element after slicing {digit!r} out of {element!r} is {want!r}, not {out!r}",
                          call=call, level="Element", mapping=repr(out), axis=", ".join(sorted(digit.axes)) or None,
                          fix=f"declare the Element as {want!r} (the same digits, without {digit!r})")
    idx = check_indices(indices, units, size, level=level, call=call, digit=repr(digit),
                        axis=", ".join(sorted(digit.axes)) or None)
    dims, at, _, _ = split_digit(layout, digit, call)
    weight = digit_weights(dims)[at]
    bits = weight * dtype.size_bits
    if bits % 8:
        raise AddressError(f"the digit {digit!r} steps {weight} {dtype!r} elements, inside a byte", call=call,
                           level="Element", mapping=repr(element), fix="slice a digit of whole bytes")
    stride = bits // 8
    if dst_medium == "dm":
        check_dm_stride(stride, hw.dma.write_address_align["DM"], digit, element, call)
    padded = tuple(C.Dim(None, 0, d.size, 1, 0) if k == at else d for k, d in enumerate(dims))
    new_layout = Mapping.from_canon(padded, layout.axis_set)
    return SliceStep(which, digit, new_layout, out, idx, tuple(i * stride for i in idx), stride)
