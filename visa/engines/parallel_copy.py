"""Asymmetric Slice by ParallelCopy in the sub context (manual "Chip/Cluster Reduce", L7400–7441,
L7603–7606).

An asymmetric slice keeps, on every chip (cluster), a *different* entry of one digit of the Element: chip
``c`` keeps entry ``indices[c]`` (ReduceScatter's ``Slice(3,0,1,2)``: chip 0 keeps B = 3, chip 1 keeps B = 0,
…, L7417–7423).  The result is a DM tensor whose Element lacks the digit.  The manual implements it by
ParallelCopy, ``stos`` (store to SRAM) commands in the sub context, so it overlaps the main context (L7606).

* :func:`plan` is the rule set (shared with the mypy plugin): the digit must be one digit of one axis that the
  Element holds whole, one index per chip (cluster), each inside the digit; it derives the new Element and,
  for every entry of the digit, which source element each destination element copies.  The sub context
  writes whole 8-byte words (``commit_size`` 8, L2330), so a new Element of fewer bytes than a multiple of 8
  is padded to one (``m["1 # 8"]`` for one i8): the padding bytes are written and hold no element.
* :func:`execute` copies the bytes, per chip and cluster, over the DM images (the written-mask travels with
  them: a slice of poison is poison; a source whose bytes were all written marks the result's range written
  by page, without a mask, docs/manual-notes.md "Written-mask by page").
* :func:`cycles`: every slice commits its share of the result, ``commit_size`` = 8 bytes a write in the sub
  context (L2330) and one write a cycle (the Commit Engine's rate, L2187–2248), all slices in parallel.  The
  fetch side reads 32-byte flits (L2192) and keeps ahead of the 8-byte writes, so the writes bound it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from visa import dtypes as dt
from visa.engines import fast_parallel_copy, fast_parallel_copy_replicas
from visa.engines.cache import cached
from visa.errors import AddressError, LayoutError, TypestateError, UnsupportedFeatureError
from visa.hw import HardwareProfile
from visa.mapping import Mapping
from visa.mapping import canon as C
from visa.memory.images import DenseImage, IntArray
from visa.memory.layout import element_bytes

__all__ = ["SliceConfig", "plan", "check_context", "check_indices", "split_digit", "execute", "cycles",
           "check_dm_stride"]

LEVEL_OF = {"chip": "Chip", "cluster": "Cluster"}


@dataclass(frozen=True, eq=False)
class SliceConfig:
    """An asymmetric slice: the ``level`` (``"Chip"`` or ``"Cluster"``) whose units keep different entries,
    the source Element, the sliced ``digit`` and the new Element, ``indices[u]`` the entry unit ``u`` keeps, and
    ``source[j]`` the source element position each destination element copies when the entry is ``j``."""

    hw: HardwareProfile
    dtype: type[dt.Scalar]
    level: str
    element: Mapping
    digit: Mapping
    out: Mapping
    indices: tuple[int, ...]
    source: IntArray

    @property
    def out_bytes(self) -> int:
        """Bytes of the result in each slice."""
        return element_bytes(self.dtype, self.out.size)

    def __str__(self) -> str:
        return (f"ParallelCopy (stos, sub context): {self.level} u keeps {self.digit!r} = indices[u], indices "
                f"{list(self.indices)}; Element {self.element!r} -> {self.out!r}")


def check_context(kind: str, call: str) -> None:
    """ParallelCopy runs in the sub context (L7605–7606): ``ctx.sub``, not ``ctx.main``."""
    if kind != "sub":
        raise TypestateError(f"an asymmetric slice is a ParallelCopy of the sub context (manual L7605–7606), not "
                             f"of ctx.{kind}", call=call, fix="pass ctx.sub")


def _single(digit: Mapping, call: str, element: Mapping) -> C.Dim:
    dims = [d for d in digit.canon if not (isinstance(d, C.Dim) and d.atom is None)]
    d = dims[0] if len(dims) == 1 else None
    if (not isinstance(d, C.Dim) or not isinstance(d.atom, C.Sym) or d.offset != 0 or d.count != d.size
            or len(digit.canon) != 1):
        raise LayoutError(f"the sliced digit {digit!r} must be one digit of one axis (such as m[\"B\"] or "
                          "m[\"C / 4 % 2\"]), without padding", call=call, level="Element", mapping=repr(element),
                          axis=", ".join(sorted(digit.axes)) or None,
                          fix="slice one axis, or one stride/modulo digit of an axis")
    return d


def split_digit(element: Mapping, digit: Mapping, call: str) -> tuple[tuple[C.Dim | C.Lin, ...], int, int, int]:
    """Find ``digit`` in ``element``'s canonical dims and split the dim holding it into (outer, digit, inner).

    Returns the split dims (outermost first), the position of the digit among them, its size and the number of
    inner dims split off after it (0 or 1).  Raises :class:`~visa.errors.LayoutError` naming the axis when the
    Element does not hold the digit whole."""
    g = _single(digit, call, element)
    assert isinstance(g.atom, C.Sym)
    name = g.atom.name
    for k, d in enumerate(element.canon):
        if not isinstance(d, C.Dim) or d.atom != g.atom:
            continue
        if g.stride % d.stride or g.stride < d.stride:
            continue
        a = g.stride // d.stride
        if d.count % (a * g.count):
            continue
        b = d.count // (a * g.count)
        if d.count != d.size or d.offset:
            raise LayoutError(f"the digit {digit!r} lies in a padded digit of Element {element!r}", call=call,
                              level="Element", mapping=repr(element), axis=name,
                              fix="slice a digit the Element holds without padding")
        outer = [C.Dim(d.atom, g.stride * g.count, b, b)] if b > 1 else []
        inner = [C.Dim(d.atom, d.stride, a, a)] if a > 1 else []
        dims = (*element.canon[:k], *outer, C.Dim(d.atom, g.stride, g.count, g.count), *inner,
                *element.canon[k + 1:])
        return dims, k + len(outer), g.count, len(inner)
    raise LayoutError(f"the digit {digit!r} is not a digit of Element {element!r}: an asymmetric slice keeps one "
                      f"entry of a digit each slice holds (manual L7400–7441)", call=call, level="Element",
                      mapping=repr(element), axis=name,
                      fix=f"slice a digit of {name} that the Element holds (e.g. {name} itself), or move {name} "
                          "into the Element first")


def check_dm_stride(stride_bytes: int, align: int, digit: Mapping, element: Mapping, call: str) -> None:
    """A slice that produces DM keeps its per-unit source base on an ``align``-byte boundary: the digit's stride
    must be a multiple of ``align`` bytes (L2424–2427; the reference's tightened check)."""
    if stride_bytes % align:
        raise AddressError(f"the sliced digit {digit!r} steps {stride_bytes} bytes in {element!r}; a slice that "
                           f"produces DM moves each unit's base by whole {align}-byte words (manual L2424–2427)",
                           call=call, level="Element", mapping=repr(element),
                           axis=", ".join(sorted(digit.axes)) or None,
                           fix=f"slice a digit whose stride is a multiple of {align} bytes (put the sliced axis "
                               "outside an 8-byte run of the Element, or pad the inner axes)")


def check_indices(indices: Sequence[object], units: int, size: int, *, level: str, call: str, digit: str,
                  axis: str | None) -> tuple[int, ...]:
    """One index per chip (cluster), each an entry of the digit (``0 <= j < size``)."""
    values = list(indices)
    if len(values) != units:
        raise LayoutError(f"{len(values)} indices for {units} {level.lower()}s: {level.lower()} u keeps entry "
                          f"indices[u] (manual L7400–7441)", call=call, level=level, mapping=digit, axis=axis,
                          fix=f"give one index per {level.lower()} ({units})")
    out: list[int] = []
    for u, j in enumerate(values):
        if isinstance(j, bool) or not isinstance(j, int | np.integer) or not 0 <= int(j) < size:
            raise LayoutError(f"{level.lower()} {u}'s index {j!r} is outside the digit {digit} (0..{size - 1})",
                              call=call, level=level, mapping=digit, axis=axis,
                              fix=f"use entries 0..{size - 1} of the digit")
        out.append(int(j))
    return tuple(out)


def plan(hw: HardwareProfile, dtype: type[dt.Scalar], levels: dict[str, Mapping], digit: Mapping,
         indices: Sequence[object], which: str) -> SliceConfig:
    """The asymmetric slice of ``digit`` by ``which`` (``"chip"`` or ``"cluster"``) over a DM tensor with these
    level mappings (pure; raises the rule's :class:`~visa.errors.VisaError`)."""
    return _plan(hw, dtype, levels["Chip"], levels["Cluster"], levels["Element"], digit, tuple(indices), which)


@cached(128)
def _plan(hw: HardwareProfile, dtype: type[dt.Scalar], chip: Mapping, cluster: Mapping, element: Mapping,
          digit: Mapping, indices: tuple[object, ...], which: str) -> SliceConfig:
    call = f"asymmetric_{which}_slice"
    level = LEVEL_OF[which]
    if dtype.size_bits % 8:
        raise UnsupportedFeatureError(f"{dtype!r} packs two elements a byte; ParallelCopy copies whole elements "
                                      "of 8-bit or wider types", call=call, level="Element", mapping=repr(element),
                                      fix="slice the tensor in an 8-bit (or wider) type")
    dims, at, size, _ = split_digit(element, digit, call)
    axis = ", ".join(sorted(digit.axes)) or None
    if at != 0:  # the reference's tightened check (furiosa-opt v0.8): ParallelCopy slices the outermost digit
        raise LayoutError(f"an asymmetric slice keeps one entry of the Element's outermost digit; {digit!r} lies "
                          f"inside {element!r} (ParallelCopy copies one contiguous block a slice, L7603–7606)",
                          call=call, level="Element", mapping=repr(element), axis=axis,
                          fix=f"lay the Element out with {digit!r} outermost, or slice it by DMA: "
                              f"view.{which}_slice(digit, element, indices).to_dm(...) takes a digit anywhere")
    # (no 8-byte stride rule here: ParallelCopy reads its entry through the fetch side, whose addresses are
    # 1-byte aligned (L1756), as the manual's own i8 step 2 does (L7417–7431); the rule is the DMA slice's)
    units = (chip if which == "chip" else cluster).size
    if which == "chip" and units <= 1:
        raise LayoutError("an asymmetric chip slice keeps a different entry on every chip, and this tensor has one "
                          "chip (manual L7400–7441)", call=call, level="Chip", mapping=repr(chip), axis=axis,
                          fix="run the kernel on several chips with the tensor's Chip over them, or slice a tile")
    if which == "cluster" and units != hw.dm.clusters_per_chip:
        raise LayoutError(f"an asymmetric cluster slice needs the tensor's Cluster over the chip's "
                          f"{hw.dm.clusters_per_chip} clusters; its Cluster {cluster!r} has size {units}", call=call,
                          level="Cluster", mapping=repr(cluster), axis=axis,
                          fix=f'lay the tensor out with a Cluster of size {hw.dm.clusters_per_chip}')
    idx = check_indices(indices, units, size, level=level, call=call, digit=repr(digit), axis=axis)
    kept = tuple(d for k, d in enumerate(dims) if k != at)
    out = Mapping.from_canon(kept, element.axis_set) if kept else Mapping.identity(element.axis_set)
    word = 8 * max(hw.commit.sub_commit_sizes) // dtype.size_bits  # elements of one sub-context write (L2330)
    if out.size % word:  # the stos writes whole 8-byte words: the new Element ends in padding
        out = out.pad(-(-out.size // word) * word)
    # destination position p' and entry j -> source position: the mixed-radix digits of ``dims``
    sizes = [d.size for d in dims]
    outer = math.prod(sizes[:at])
    inner = math.prod(sizes[at + 1:])
    p = np.arange(outer * inner, dtype=np.int64)  # the real positions of the new Element (padding follows)
    o, i = np.divmod(p, inner)
    j = np.arange(size, dtype=np.int64)[:, None]
    source = (o[None, :] * size + j) * inner + i[None, :]
    source.setflags(write=False)
    return SliceConfig(hw, dtype, level, element, digit, out, idx, source)


def execute(cfg: SliceConfig, src: DenseImage, dst: DenseImage, chip: int, src_address: int, dst_address: int
            ) -> None:
    """Copy one chip's share: in every slice of cluster ``k`` (of this ``chip``), the result's element ``p'``
    is the source's element ``source[j][p']`` with ``j = indices[chip]`` (``indices[k]`` for a cluster slice)."""
    _copy(cfg, src, dst, chip, src_address, dst_address)
    if fast_parallel_copy_replicas.REPLICAS.on:  # (a source the copy overwrote has no labels left: none recorded)
        fast_parallel_copy_replicas.record(cfg, src, dst, chip, src_address, dst_address)


def _copy(cfg: SliceConfig, src: DenseImage, dst: DenseImage, chip: int, src_address: int, dst_address: int
          ) -> None:
    if fast_parallel_copy.STRIDED.on and fast_parallel_copy.execute(cfg, src, dst, chip, src_address, dst_address):
        return
    nb = cfg.dtype.size_bits // 8
    lead = src.lead_shape
    nbytes = src.nbytes
    real = cfg.source.shape[1]  # elements copied; the padding of a padded Element stays poison
    lo, hi = dst_address, dst_address + real * nb
    s_lo = src_address + int(cfg.source.min()) * nb if cfg.source.size else src_address
    s_hi = src_address + (int(cfg.source.max()) + 1) * nb if cfg.source.size else src_address
    sv = src.flat_data(0, 0).reshape(*lead, nbytes)
    dv = dst.flat_data(lo, hi).reshape(*lead, nbytes)
    byte = np.arange(nb, dtype=np.int64)
    dst_idx = dst_address + (np.arange(real, dtype=np.int64)[:, None] * nb + byte).reshape(-1)
    for k in range(lead[0]):
        j = cfg.indices[chip] if cfg.level == "Chip" else cfg.indices[min(k, len(cfg.indices) - 1)]
        src_idx = src_address + (cfg.source[j][:, None] * nb + byte).reshape(-1)
        dv[k][..., dst_idx] = sv[k][..., src_idx]
    # the written-mask travels with the bytes: the result's bytes [lo, hi) are one range in every slice
    if src.all_written(s_lo, s_hi):
        dst.mark_written(slice(None), lo, hi)
        return
    sk = src.known_bytes(s_lo, s_hi)
    dk = dst.mask_for_write(slice(None), lo, hi).reshape(*lead, nbytes)
    for k in range(lead[0]):
        j = cfg.indices[chip] if cfg.level == "Chip" else cfg.indices[min(k, len(cfg.indices) - 1)]
        src_idx = src_address - s_lo + (cfg.source[j][:, None] * nb + byte).reshape(-1)
        dk[k][..., dst_idx] = sk[k][..., src_idx]


def cycles(cfg: SliceConfig) -> int:
    """Sub-context commits of ``commit_size`` = 8 bytes (L2330), one a cycle, every slice in parallel: the
    result's bytes per slice over 8."""
    size = max(cfg.hw.commit.sub_commit_sizes)
    return max(1, -(-cfg.out_bytes // size))
