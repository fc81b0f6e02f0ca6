"""The rules a tensor's placement must satisfy (manual "Alignment Constraint" and "Size Constraint", L1070–1093).

:func:`check_placement` is the one place these rules live; the runtime calls it when a tensor is created and
the mypy plugin calls it on the types it sees.  Every refusal names the tensor, the level and the axis.

>>> from visa import AxisSet, RNGD, i32
>>> ax = AxisSet(A=2048)
>>> check_placement(RNGD, "dm", i32, {"Chip": ax.m["1"], "Cluster": ax.m["1 # 2"],
...                 "Slice": ax.m["A / 8 # 256"], "Element": ax.m["A % 8"]}, 0, num_chips=1)
>>> check_placement(RNGD, "dm", i32, {"Chip": ax.m["1"], "Cluster": ax.m["1"],
...                 "Slice": ax.m["A / 8 # 256"], "Element": ax.m["A % 8"]}, 0, num_chips=1)
Traceback (most recent call last):
visa.errors.HardwareLimitError: DmTensor: Cluster m["1"]: Cluster size must be 2, got 1 ...
"""

from __future__ import annotations

from collections.abc import Mapping as AbcMapping

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa.errors import AddressError, HardwareLimitError, LayoutError, VisaError
from visa.hw import HardwareProfile
from visa.mapping import Mapping
from visa.mapping.canon import Canon, Dim, Sym, is_regular
from visa.mapping.evaluate import digit_weights, forward

__all__ = ["LEVELS", "TYPE_NAMES", "LEVEL_PARAMS", "check_types", "check_placement", "describe", "element_bytes",
           "capacity_bytes", "tile_offset", "check_every_position", "strides_kept", "sym_only"]

#: The levels of each memory's tensor type, outermost first (manual L1033–1069).
LEVELS: dict[str, tuple[str, ...]] = {
    "host": ("Element",),
    "hbm": ("Chip", "Element"),
    "dm": ("Chip", "Cluster", "Slice", "Element"),
    "trf": ("Chip", "Cluster", "Slice", "Row", "Element"),
    "vrf": ("Chip", "Cluster", "Slice", "Element"),
    "spm": ("Chip", "Cluster", "Pe", "Element"),  # a reference extension (design API.md §8): 4 KiB per PE
}

TYPE_NAMES = {"host": "HostTensor", "hbm": "HbmTensor", "dm": "DmTensor", "trf": "TrfTensor", "vrf": "VrfTensor",
              "spm": "SpmTensor"}


def element_bytes(dtype: type[dt.Scalar], n: int) -> int:
    """Bytes that n elements of ``dtype`` count for in capacity rules (``size_of::<D>() · n``, L1088–1090)."""
    return (n * dtype.size_bits + 7) // 8


def capacity_bytes(hw: HardwareProfile, memory: str, trf_half: bool = False) -> int:
    """Capacity of the Element level of one memory unit (per chip, slice or TRF row; manual L1088–1090)."""
    if memory == "hbm":
        return hw.hbm.chip_bytes
    if memory == "dm":
        return hw.dm.slice_bytes
    if memory == "trf":
        return hw.trf.half_row_bytes if trf_half else hw.trf.row_bytes
    if memory == "vrf":
        return hw.vrf.slice_bytes
    if memory == "spm":
        return hw.spm.pe_bytes
    raise ValueError(memory)


def _name(memory: str) -> str:
    return TYPE_NAMES[memory]


def describe(memory: str, dtype: type[dt.Scalar], levels: AbcMapping[str, Mapping], address: int) -> str:
    """``DmTensor[i32, m["1"], m["1 # 2"], m["A / 8 # 256"], m["A % 8"]] @ 0`` (how errors name a tensor; the
    manual's types, L1033–1069)."""
    inner = ", ".join([repr(dtype), *(repr(levels[k]) for k in LEVELS.get(memory, tuple(levels)) if k in levels)])
    return f"{_name(memory)}[{inner}] @ {address}"


def check_placement(hw: HardwareProfile, memory: str, dtype: type[dt.Scalar], levels: AbcMapping[str, Mapping],
                    address: int, *, num_chips: int | None, trf_half: bool = False, name: str | None = None,
                    call: str | None = None) -> None:
    """Raise unless a tensor of ``dtype`` with these level mappings may live at ``address`` in ``memory`` (manual
    L1070–1093).

    ``address`` is a byte offset (per chip for HBM, per slice for DM and VRF, per row for the TRF).
    ``num_chips`` is the kernel's chip count (``None`` on the host, before a launch fixes it).  ``call`` is
    the operation creating the tensor (default: the type name) and ``name`` how messages name the tensor
    (default: its type, mappings and address).  Pure: the mypy plugin calls it too.
    """
    who = call or _name(memory)
    check_types(dtype, levels, address, who)

    def fail(cls: type[VisaError], text: str, level: str, mapping: Mapping | None, fix: str,
             axis: str | None = None) -> VisaError:
        tensor = name or describe(memory, dtype, levels, address)  # (named only when refused)
        return cls(f"{text} in {tensor}", call=who, level=level, mapping=repr(mapping) if mapping else None,
                   axis=axis, fix=fix)

    element = levels["Element"]
    if address < 0:
        raise fail(AddressError, f"address {address} is negative", "Element", element,
                   "addresses are byte offsets from 0", _axis(element))
    if address % dtype.alignment:
        raise fail(AddressError, f"address {address} is not a multiple of size_of::<{dtype!r}>() = "
                   f"{dtype.alignment} (manual L1071)", "Element", element,
                   f"use an address that is a multiple of {dtype.alignment}", _axis(element))
    chip = levels.get("Chip")
    if chip is not None and num_chips is not None and chip.size != num_chips:
        raise fail(HardwareLimitError, f"Chip size must equal the kernel's chip count {num_chips}, got "
                   f"{chip.size} (manual L1079)", "Chip", chip,
                   f'pad it: m["1 # {num_chips}"] or m["X # {num_chips}"]', _axis(chip))
    if memory in ("dm", "trf", "vrf"):
        cluster, slice_ = levels["Cluster"], levels["Slice"]
        if cluster.size != hw.dm.clusters_per_chip:
            raise fail(HardwareLimitError, f"Cluster size must be {hw.dm.clusters_per_chip}, got {cluster.size} "
                       "(manual L1080, L1708)", "Cluster", cluster,
                       f'pad it: m["1 # {hw.dm.clusters_per_chip}"] for one cluster', _axis(cluster))
        if slice_.size != hw.dm.slices_per_cluster:
            raise fail(HardwareLimitError, f"Slice size must be {hw.dm.slices_per_cluster}, got {slice_.size} "
                       "(manual L1081, L1709)", "Slice", slice_,
                       f'pad it: m["X # {hw.dm.slices_per_cluster}"]', _axis(slice_))
    if memory == "spm":
        cluster, pe = levels["Cluster"], levels["Pe"]
        pes = hw.dm.slices_per_cluster // hw.spm.slices_per_pe
        if cluster.size != hw.dm.clusters_per_chip:
            raise fail(HardwareLimitError, f"Cluster size must be {hw.dm.clusters_per_chip}, got {cluster.size} "
                       "(manual L1080)", "Cluster", cluster,
                       f'pad it: m["1 # {hw.dm.clusters_per_chip}"] for one cluster', _axis(cluster))
        if pe.size != pes:
            raise fail(HardwareLimitError, f"Pe size must be {pes} (a cluster's {hw.dm.slices_per_cluster} slices, "
                       f"{hw.spm.slices_per_pe} a PE, manual L2343), got {pe.size}", "Pe", pe,
                       f'pad it: m["1 # {pes}"] for one PE', _axis(pe))
    if memory == "trf":
        row = levels["Row"]
        if row.size > hw.trf.rows:
            raise fail(HardwareLimitError, f"Row size must be at most {hw.trf.rows}, got {row.size} "
                       "(manual L1089)", "Row", row, "put the extra part of the axis in the Element mapping",
                       _axis(row))
    if memory == "host":
        return
    need = element_bytes(dtype, element.size)
    cap = capacity_bytes(hw, memory, trf_half)
    if need > cap:
        raise fail(HardwareLimitError, f"Element holds {element.size} × {dtype!r} = {need} bytes, more than the "
                   f"{cap} bytes of one {_unit(memory, trf_half)} (manual L1088–1090)", "Element", element,
                   "move part of an axis to Slice/Time, or tile the tensor", _axis(element))
    if address + need > cap:
        raise fail(AddressError, f"bytes {address}..{address + need} run past the {cap} bytes of one "
                   f"{_unit(memory, trf_half)} (manual L1091–1093)", "Element", element,
                   f"use an address at most {cap - need}", _axis(element))


def _unit(memory: str, trf_half: bool) -> str:
    """What one unit of a memory is, as a capacity refusal names it."""
    return {"hbm": "chip", "dm": "slice", "trf": "TRF row" + (" half" if trf_half else ""), "vrf": "slice",
            "spm": "PE's SPM (4 KiB, the reference's figure)"}[memory]


#: The Python parameter that carries each level's mapping (``slice`` is a Python builtin, hence ``slice_``).
LEVEL_PARAMS = {"Chip": "chip", "Cluster": "cluster", "Slice": "slice_", "Row": "row", "Pe": "pe",
                "Element": "element"}


def check_types(dtype: object, levels: AbcMapping[str, object], address: object, call: str) -> None:
    """Refuse a wrong Python type among a tensor's parts before any rule reads them: the element type, each
    level's mapping and the byte address (a :class:`~visa.errors.WrongTypeError` that names the parameter)."""
    from visa.validate import expect_dtype, expect_int, expect_mapping

    expect_dtype(dtype, "dtype", call=call)
    for level, mp in levels.items():
        expect_mapping(mp, LEVEL_PARAMS.get(level, level), call=call, level=level)
    expect_int(address, "address", call=call)


def _axis(mapping: Mapping) -> str | None:
    names = sorted(mapping.axes)
    return names[0] if len(names) == 1 else (", ".join(names) or None)


def tile_offset(element: Mapping, dim: Mapping, size: int, tile_mapping: Mapping, start: int, call: str) -> int:
    """The element offset of ``view.tile(dim, size, tile_mapping, start)`` in a view whose Element is
    ``element`` (manual L813–832, L955–970), or the refusal: a tile that runs past ``dim``, starts at an index
    the view does not hold, or whose mapping does not keep the base layout's strides (L829).  Pure (the
    tensor views and the mypy plugin call it)."""
    from visa.validate import expect_int, expect_mapping

    dim = expect_mapping(dim, "dim", call=call)
    tile_mapping = expect_mapping(tile_mapping, "tile_mapping", call=call)
    size = expect_int(size, "size", call=call)
    start = expect_int(start, "start", call=call)
    key = (element.key, dim.key, size, tile_mapping.key, start)
    known = _OFFSETS.get(key)
    if known is not None:  # this tile was checked before (a later launch of the same kernel)
        return known
    if not 0 <= start or start + size > dim.size:
        raise LayoutError(f"a tile of {size} from {start} runs past {dim!r} (size {dim.size})", call=call,
                          level="Element", mapping=repr(dim), axis=_axis(dim),
                          fix=f"start at most {dim.size - size}" if size <= dim.size else
                          f"take a tile of at most {dim.size}")
    first = dim.map(start)
    offset = element.position_of(first if first is not None else {})
    if offset is None:
        raise LayoutError(f"the view does not hold index {first} where the tile starts", call=call,
                          level="Element", mapping=repr(element), axis=_axis(dim),
                          fix="start the tile at an index the view holds")
    # the tile holds the sub-tensor: tile position p holds base index (tile index + start index)
    shift = dict(first or {})
    if not strides_kept(element, tile_mapping, shift, int(offset)):
        # not separable, or a refusal: check every position (and name the first one that differs)
        check_every_position(element, dim, tile_mapping, shift, int(offset), call)
    if len(_OFFSETS) >= 1 << 16:
        _OFFSETS.clear()
    _OFFSETS[key] = int(offset)
    return int(offset)


#: Tiles already checked, by the exact keys of their mappings and their start (a refusal is never kept).
_OFFSETS: dict[object, int] = {}


def check_every_position(element: Mapping, dim: Mapping, tile_mapping: Mapping, shift: dict[str, int], offset: int,
                         call: str) -> None:
    """The refusal of :func:`tile_offset` by brute force: every valid position p of ``tile_mapping``, its index
    shifted by ``shift``, must be held by ``element`` at ``offset + p`` (L829); O(tile size)."""
    ev = tile_mapping.evaluate()
    coords = {a: np.where(ev.valid, ev.coord(a) + shift.get(a, 0), 0) for a in element.axes}
    pos, held = element.locate(coords, (tile_mapping.size,))
    want = offset + np.arange(tile_mapping.size)
    bad = ev.valid & ~(held & (pos == want))
    if bad.any():
        k = int(np.argmax(bad))
        raise LayoutError(f"tile position {k} holds a different element of the base than {tile_mapping!r} "
                          "says: the tile mapping must keep the base layout's strides (manual L829)",
                          call=call, level="Element", mapping=repr(tile_mapping), axis=_axis(dim),
                          fix="write the tile dimension as `X = size # footprint` in the base's order")


def sym_only(dims: Canon) -> bool:
    """Every digit is a plain axis digit or padding (no window, skew or linear combination) and regular."""
    return is_regular(dims) and all(isinstance(d, Dim) and (d.atom is None or isinstance(d.atom, Sym))
                                    for d in dims)


#: One digit group of a tile mapping (:func:`strides_kept`): the axis (None: padding), the tile-position part of
#: each combination of the group's digits, the axis coordinate there (None for padding) and whether it is valid.
_Group = tuple[str | None, npt.NDArray[np.int64], npt.NDArray[np.int64] | None, npt.NDArray[np.bool_]]
_GROUPS: dict[object, list[_Group] | None] = {}  # by the tile mapping's exact key: a kernel tiles alike each step
_SYM_ONLY: dict[object, bool] = {}


def _sym_only(mapping: Mapping) -> bool:
    """:func:`sym_only` of the mapping's canonical form, kept by the mapping's exact key."""
    got = _SYM_ONLY.get(mapping.key)
    if got is None:
        if len(_SYM_ONLY) >= 4096:
            _SYM_ONLY.clear()
        got = _SYM_ONLY[mapping.key] = sym_only(mapping.canon)
    return got


def _tile_groups(tile_mapping: Mapping) -> list[_Group] | None:
    """The digit groups of a plain tile mapping (one per axis and one of padding), or None when it is not one
    (a window, skew or linear combination): derived once per mapping (they do not depend on where the tile
    starts)."""
    key = tile_mapping.key
    if key in _GROUPS:
        return _GROUPS[key]
    tdims = tile_mapping.canon
    out: list[_Group] | None = None
    if sym_only(tdims):
        weights = digit_weights(tdims)
        members: dict[str | None, list[int]] = {}
        for j, d in enumerate(tdims):
            assert isinstance(d, Dim)
            members.setdefault(d.atom.name if isinstance(d.atom, Sym) else None, []).append(j)
        out = []
        for name, idx in members.items():
            sub = tuple(tdims[j] for j in idx)
            # the tile-position part of each combination of this group's digits, in forward()'s (C) order
            part: npt.NDArray[np.int64] = np.zeros((), dtype=np.int64)
            for k, j in enumerate(idx):
                view = [1] * len(idx)
                view[k] = tdims[j].size
                part = part + np.arange(tdims[j].size, dtype=np.int64).reshape(view) * weights[j]
            shape = tuple(tdims[j].size for j in idx)
            part = np.ascontiguousarray(np.broadcast_to(part, shape).reshape(-1))
            ev = forward(sub)
            valid = np.array(ev.valid, dtype=bool).reshape(-1)
            coord = None if name is None else np.array(ev.coord(name), dtype=np.int64).reshape(-1)
            for arr in (part, valid, coord):
                if arr is not None:
                    arr.flags.writeable = False
            assert valid.size == part.size and (coord is None or coord.size == part.size)
            out.append((name, part, coord, valid))
    if len(_GROUPS) >= 1024:
        _GROUPS.clear()
    _GROUPS[key] = out
    return out


def strides_kept(element: Mapping, tile_mapping: Mapping, shift: dict[str, int], offset: int) -> bool:
    """True when every valid position p of ``tile_mapping`` holds, shifted by ``shift``, the base element at
    position ``offset + p`` of ``element`` — the check :func:`tile_offset` makes, in O(Σ axis extents) instead of
    O(tile size); False when it does not hold or when this shortcut does not apply (the caller then checks
    every position).

    It applies when both mappings are regular digit decompositions of plain axes (``canon.is_regular``, no
    window, skew or linear combination).  Then a tile position is a sum of per-axis parts (the digits of each
    axis, and the padding digits), its validity is a product of per-axis conditions, and the base position of
    an index is ``offset`` plus a sum of per-axis terms (a regular inverse is a digit decomposition per axis).
    A sum of functions of independent digit groups equals ``offset + p`` on the product of their valid sets
    exactly when each group's difference is constant over its own valid set and the constants cancel, so each
    axis' digits are checked alone (the other axes held at the tile's start index).
    """
    groups = _tile_groups(tile_mapping)
    if groups is None or not _sym_only(element):
        return False
    base_axes = element.axes
    total = 0  # Σ of the per-group constants: base part − tile part
    for name, part, coord, valid in groups:
        if not valid.any():
            return True  # the tile holds no valid position: nothing to check
        if name is None or name not in base_axes:
            base: npt.NDArray[np.int64] = np.full(part.shape, offset, dtype=np.int64)
        else:
            coords = {a: np.full(part.shape, shift.get(a, 0), dtype=np.int64) for a in base_axes}
            assert coord is not None
            coords[name] = coord + shift.get(name, 0)
            pos, held = element.locate(coords, part.shape)
            if not bool(np.all(held.reshape(-1)[valid])):
                return False
            base = pos.reshape(-1)
        diff = (base - offset - part)[valid]
        if bool(np.any(diff != diff[0])):
            return False
        total += int(diff[0])
    return total == 0

