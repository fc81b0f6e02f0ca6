"""Tensor handles: where a tensor lives and how its buffer holds it (manual "Memory and Stream", L1029–1093).

A tensor is a handle: its dtype, one mapping per level, its byte address and the memory (a context's device)
it lives in.  A device tensor holds the tensor ``T`` when, for every level position, the element at
``Chip.map(c) ∪ Cluster.map(k) ∪ Slice.map(s) ∪ [Row.map(r) ∪] Element.map(e)`` stores ``T`` at that
index (L1152–1161).  Moves between memories are DMA operations (:mod:`visa.tensors.moves`, planned by
:mod:`visa.engines.dma`); the methods here only delegate to them.  Views and tiles are metadata (L813–832, L955–970).

The type parameters (``HbmTensor[i32, m["1"], m["A"]]``) mirror the manual's; at run time the handle keeps
the values, and the mypy plugin (:mod:`visa.mypy`) checks the annotations.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Self, TypeVar

import numpy as np
import numpy.typing as npt
from typing_extensions import TypeVar as TypeVarD

from visa import dtypes as dt
from visa.errors import DtypeError, HardwareLimitError, LayoutError, PoisonError, VisaError
from visa.hw import PROFILES
from visa.mapping import Index, Mapping, pair_of
from visa.mapping import canon as C
from visa.mapping.evaluate import IntArray, _axis_sizes
from visa.memory.footprint import units_of
from visa.memory.images import BoolArray, DenseImage, PagedImage, load
from visa.memory.known import all_true
from visa.memory.layout import LEVELS, TYPE_NAMES, check_placement, element_bytes, tile_offset
from visa.memory.registry import Region
from visa.tensors import fast_host
from visa.tensors.fast_host import PLAIN
from visa.validate import expect_choice, expect_dtype, expect_instance, expect_mapping, wrong_type

#: An explicit DMA stream ``(Time, Packet)`` (manual ``Stream = { time, packet }``, L2413–2419).
Stream = tuple[Mapping, Mapping]
#: A tensor DMA's stream: one for every DMN, or a heterogeneous DMA's ``{dmn: (Time, Packet)}`` (L2482–2504).
Streams = Stream | dict[int, Stream]

if TYPE_CHECKING:
    from visa.tensors.collective import ShuffledSource
    from visa.tensors.device import Device, DmaContext, TuHandle
    from visa.tensors.indirect import GatherSource, ScatterTarget

__all__ = [
    "HostTensor", "DeviceTensor", "HbmTensor", "DmTensor", "TrfTensor", "VrfTensor", "TensorView",
    "HbmTensorView", "DmTensorView", "TrfAddress", "logical_axes", "D", "Chip", "Cluster", "Slice", "Row",
    "Element", "Stream", "to_storage", "check_bitcast",
]

D = TypeVar("D", bound=dt.Scalar)
Chip = TypeVar("Chip")
Cluster = TypeVar("Cluster")
Slice = TypeVar("Slice")
Row = TypeVar("Row")
Element = TypeVar("Element")
# A view's parameters default to Any, so that a bare ``DmTensorView`` stays a complete type (PEP 696).
VD = TypeVarD("VD", bound=dt.Scalar, default=Any)
VChip = TypeVarD("VChip", default=Any)
VD2 = TypeVar("VD2", bound=dt.Scalar)
VCluster = TypeVarD("VCluster", default=Any)
VSlice = TypeVarD("VSlice", default=Any)
VElement = TypeVarD("VElement", default=Any)


class TrfAddress:
    """Which part of each TRF row a tensor occupies (manual ``enum TrfAddress``, L4043–4048)."""

    __slots__ = ("name", "offset_halves")
    Full: ClassVar[TrfAddress]
    FirstHalf: ClassVar[TrfAddress]
    SecondHalf: ClassVar[TrfAddress]

    def __init__(self, name: str, offset_halves: int) -> None:
        self.name = name
        self.offset_halves = offset_halves

    @property
    def half(self) -> bool:
        """True for FirstHalf and SecondHalf (4 KB of each 8 KB row, L4151–4154)."""
        return self.name != "Full"

    def __repr__(self) -> str:
        return f"TrfAddress.{self.name}"


TrfAddress.Full = TrfAddress("Full", 0)
TrfAddress.FirstHalf = TrfAddress("FirstHalf", 0)
TrfAddress.SecondHalf = TrfAddress("SecondHalf", 1)


def logical_axes(mappings: Sequence[Mapping], axes: str | Sequence[str] | None) -> list[str]:
    """The axis order of a logical tensor: ``axes`` as given, else first appearance in the mappings
    (``HostTensor.from_numpy``)."""
    present: list[str] = []
    for mp in mappings:
        for d in _axis_order(mp):
            if d not in present:
                present.append(d)
    if axes is None:
        return present
    if not (isinstance(axes, str) or (isinstance(axes, list | tuple) and all(isinstance(a, str) for a in axes))):
        raise wrong_type("axes", axes, 'axis names: a str such as "A B" or a list of str', call="axes")
    order = axes.split() if isinstance(axes, str) else list(axes)
    if sorted(order) != sorted(present):
        raise LayoutError(f"axes {' '.join(order)} do not match the tensor's axes {' '.join(present)}",
                          call="axes", fix=f'pass axes="{" ".join(present)}"')
    return order


def _axis_order(mp: Mapping) -> list[str]:
    names = [n for n in _text_order(mp.text) + _text_order(str(mp)) if n in mp.axes]
    names = list(dict.fromkeys(names))
    return names + sorted(set(mp.axes) - set(names))


def _text_order(text: str) -> list[str]:
    out: list[str] = []
    for tok in re.findall(r"[A-Za-z_][A-Za-z0-9_]*'*", text):
        if tok not in out:
            out.append(tok)
    return out


def _sizes(mappings: Sequence[Mapping]) -> dict[str, int]:
    """The extent of each axis the buffer holds: the axis size, or less where a mapping resizes it (a tile's
    ``B = 2`` holds B in 0..2, L824–832)."""
    full: dict[str, int] = {}
    top: dict[str, int] = {}
    inexact: set[str] = set()
    for mp in mappings:
        sizes = _axis_sizes(mp.canon)
        full.update(sizes)
        for d in mp.canon:
            if isinstance(d, C.Dim) and isinstance(d.atom, C.Sym):
                top[d.atom.name] = top.get(d.atom.name, 0) + (d.count - 1) * d.stride
            elif not (isinstance(d, C.Dim) and d.atom is None):
                inexact.update(sizes)
    return {a: n if a in inexact or a not in top else min(n, top[a] + 1) for a, n in full.items()}


class HostTensor(Generic[D, Element]):
    """A tensor in host memory: ``Element.size`` values of ``dtype`` (manual L612–620).

    >>> from visa import AxisSet, i32
    >>> ax = AxisSet(A=2, B=3)
    >>> t = HostTensor.from_numpy(np.arange(6).reshape(2, 3), i32, ax.m["B, A"], axes="A B")
    >>> t.values.tolist(), t.numpy(axes="A B").tolist()
    ([0, 3, 1, 4, 2, 5], [[0, 1, 2], [3, 4, 5]])
    """

    __slots__ = ("dtype", "element", "_values", "known", "source", "owned")

    def __init__(self, dtype: type[D], element: Mapping, values: npt.NDArray[Any], known: BoolArray, *,
                 source: str = "", owned: bool = False) -> None:
        self.dtype = dtype
        self.element = element
        self._values = values
        self.known = known
        self.source = source  # the operation that filled the buffer ("" for the host's own data)
        #: visa made ``values`` and nobody else holds a writable reference (from_numpy, rand, to_host): an HBM
        #: copy may share it (copy on write).  A buffer given to the constructor may be the caller's.
        self.owned = owned

    @property
    def values(self) -> npt.NDArray[Any]:
        """The buffer, one value per position (a read-only view).  Positions that hold no tensor index (padding)
        read 0; a position that holds an index but was never written is poison and raises
        :class:`~visa.errors.PoisonError` naming the tensor and the operation that filled it (issue 16)."""
        held = self.element.validity()
        missing = held & ~self.known
        if missing.any():
            k = int(np.argmax(missing))
            raise PoisonError(f"{int(missing.sum())} position(s) of {self!r} hold a tensor index but were never "
                              f"written{_origin(self.source)}, e.g. position {k} (index "
                              f"{_index_text((self.element.map(k) or Index()).text())})", call="HostTensor.values",
                              mapping=repr(self.element),
                              fix="write every element (unmasked padding or a missing slice leaves poison); "
                                  "read .known to see which positions hold data")
        out = np.where(held, self._values, np.zeros((), dtype=self._values.dtype))
        out.flags.writeable = False
        return out

    def buffer(self) -> tuple[npt.NDArray[Any], BoolArray]:
        """The raw buffer and its written mask, poison included (for the DMA that moves it; never a result).
        Read-only views: HBM may share the buffer (copy on write), so nothing writes it through here."""
        values = self._values.view()
        values.flags.writeable = False
        return values, self.known

    @classmethod
    def from_numpy(cls, array: npt.ArrayLike, dtype: type[D], mapping: Mapping,
                   axes: str | Sequence[str] | None = None, *, overflow: str = "error") -> HostTensor[D, Any]:
        """The host buffer holding the logical tensor ``array`` (numpy dims in the order ``axes``
        names).

        Integers must be values of ``dtype``; floats are rounded to the nearest value of ``dtype`` (ties to
        even).  A value beyond ``dtype``'s range, an infinity where ``dtype`` has none (f8e4m3, seed 000) and
        complex input are refused (:class:`~visa.errors.DtypeError`) unless ``overflow`` says how to convert:
        ``"saturate"`` clamps to the range ends (±inf too), ``"wrap"`` (integer types) keeps the low bits
        (two's complement), ``"inf"`` / ``"nan"`` (float types that have them) give ±inf or NaN as a numpy cast
        would.  NaN is kept in a float type (every visa float type has NaN).  docs/manual-notes.md, "Host data".
        """
        call = "HostTensor.from_numpy"
        dtype = expect_dtype(dtype, "dtype", call=call)
        mapping = expect_mapping(mapping, "mapping", call=call)
        expect_choice(overflow, _OVERFLOW, "overflow", call=call)
        if axes is not None and not isinstance(axes, str | list | tuple):
            raise wrong_type("axes", axes, 'a str such as "A B" or a list of axis names', call=call)
        order, want = _logical_shape([mapping], axes)
        check_host_size(dtype, mapping, want, call)
        masked = isinstance(array, np.ma.MaskedArray) and np.ma.getmask(  # type: ignore[no-untyped-call, unused-ignore]
            array).any()
        if masked:  # (np.asarray drops the mask)
            raise wrong_type("array", array, "a plain numpy array: the masked values of a masked array would be "
                             "read as data", call=call, fix="pass array.filled(value), or array.data if the masked "
                                                            "values are data")
        try:
            arr = np.asarray(array)
        except Exception as err:  # ragged lists and the like: numpy's own refusal, named
            raise wrong_type("array", array, f"an array of shape {want}", call=call) from err
        if arr.dtype.kind not in "biuf" and arr.dtype not in dt._ML_FLOATS:
            raise dt.DtypeError(f"the array holds {arr.dtype} values, which are not numbers of {dtype!r}"
                                + (" (complex input: its imaginary part would be dropped)"
                                   if arr.dtype.kind == "c" else ""), call=call, mapping=repr(mapping),
                                fix="pass array.real (or abs) explicitly" if arr.dtype.kind == "c"
                                else "pass an int or float numpy array")
        if arr.shape != want:
            raise LayoutError(f"the array has shape {arr.shape}, but {mapping!r} over axes {' '.join(order)} "
                              f"needs {want}", call="HostTensor.from_numpy", mapping=repr(mapping),
                              fix="reshape the array, or pass axes= in the array's dimension order")
        stored = to_storage(dtype, arr, call, overflow=overflow)
        plain = fast_host.lay_out_plain(dtype, mapping, stored, order) if order and PLAIN.on else None
        if plain is not None:  # a strided view of the array: one copy, no evaluation (all known)
            return cls(dtype, mapping, plain, np.broadcast_to(np.True_, plain.shape), owned=True)
        ev = mapping.evaluate()
        idx = tuple(np.where(ev.valid, ev.coord(a), 0) for a in order)
        values = stored[idx] if order else np.broadcast_to(stored, (mapping.size,)).copy()
        values = np.where(ev.valid, values, np.zeros((), dtype=values.dtype)).astype(dtype.storage)
        return cls(dtype, mapping, values, ev.valid.copy(), owned=True)

    @classmethod
    def rand(cls, dtype: type[D], mapping: Mapping, rng: np.random.Generator) -> HostTensor[D, Any]:
        """A host tensor of random representable values (manual ``HostTensor::rand``, L52)."""
        dtype = expect_dtype(dtype, "dtype", call="HostTensor.rand")
        mapping = expect_mapping(mapping, "mapping", call="HostTensor.rand")
        expect_instance(rng, np.random.Generator, "rng", call="HostTensor.rand",
                        expected="a numpy Generator (np.random.default_rng(seed))")
        order, shape = _logical_shape([mapping], None)
        check_host_size(dtype, mapping, shape, "HostTensor.rand")
        return cls.from_numpy(dt.random_values(dtype, shape, rng), dtype, mapping, order)

    @classmethod
    def zeros(cls, dtype: type[D], mapping: Mapping) -> HostTensor[D, Any]:
        """A host tensor of zeros (as ``HostTensor::rand``, manual L52, with every value 0)."""
        dtype = expect_dtype(dtype, "dtype", call="HostTensor.zeros")
        mapping = expect_mapping(mapping, "mapping", call="HostTensor.zeros")
        order, shape = _logical_shape([mapping], None)
        check_host_size(dtype, mapping, shape, "HostTensor.zeros")
        return cls.from_numpy(np.zeros(shape, dtype=dtype.storage), dtype, mapping, order)

    def numpy(self, axes: str | Sequence[str] | None = None) -> npt.NDArray[Any]:
        """The logical tensor, numpy dims in the order ``axes`` names (default: first appearance)."""
        fast = fast_host.plain_logical(self.element, axes, self._values, self.known, self.dtype) if PLAIN.on else None
        if fast is not None:
            return fast
        return _logical(self.dtype, [self.element], axes, lambda pos: (self._values[pos[0]], self.known[pos[0]]),
                        "HostTensor.numpy", name=repr(self) + _origin(self.source))

    def to_hbm(self, chip: Mapping, element: Mapping, pdma: DmaContext, address: int, *,
               stream: Stream | None = None) -> HbmTensor[D, Any, Any]:
        """PCIe DMA to HBM (manual L53, L193): the same tensor, laid out as ``(chip, element)``."""
        import visa.tensors.moves as dma

        return dma.host_to_hbm(self, chip, element, pdma, address, stream=stream)

    def __repr__(self) -> str:
        return f"HostTensor[{self.dtype!r}, {self.element!r}]"

    def _repr_html_(self) -> str:
        """The tensor in a notebook: its type, element mapping and first values (:mod:`visa.tensors.show`)."""
        from visa.tensors.show import host_html

        return host_html(self)


_OVERFLOW = ("error", "saturate", "wrap", "inf", "nan")


def _index_text(text: str) -> str:
    return text if text == "{}" else "{" + text + "}"


def _origin(source: str) -> str:
    return f" (filled by {source})" if source else ""


#: The most bytes a host tensor may hold: what the HBM of the largest system holds (every chip of every profile;
#: a host tensor exists to go there, L44–57).  Past it, a legal mapping size is refused before any allocation.
HOST_BYTES = max(hw.hbm.chip_bytes * hw.max_chips for hw in PROFILES.values())


def check_host_size(dtype: type[dt.Scalar], mapping: Mapping, shape: tuple[int, ...], call: str) -> None:
    """Refuse a host tensor no memory can hold (its logical tensor or its buffer past :data:`HOST_BYTES`), before
    anything is allocated: mapping sizes up to 2**48 are legal, numpy would raise ``MemoryError`` (issue 23)."""
    elements = max(math.prod(shape), mapping.size)
    nbytes = element_bytes(dtype, elements)
    if nbytes > HOST_BYTES:
        raise HardwareLimitError(
            f"{mapping!r} holds {elements} × {dtype!r} = {nbytes} bytes, more than the {HOST_BYTES} bytes of HBM of "
            "the largest system a host tensor can go to (manual L44–57, L1088–1090)", call=call, level="Element",
            mapping=repr(mapping), axis=", ".join(sorted(mapping.axes)) or None,
            fix="make the tensor smaller, or build it in parts (tiles)")


def to_storage(dtype: type[dt.Scalar], arr: npt.NDArray[Any], call: str, *,
               overflow: str = "error") -> npt.NDArray[Any]:
    """Host values as ``dtype.storage`` (L1962–1979 name the types; the host side converts), by the range rules
    of :func:`host_range_check`: nothing out of range, no infinity where ``dtype`` has none, and no complex
    values, unless ``overflow`` says how to convert.  Floats round to nearest, ties to even."""
    arr = np.asarray(arr)
    if arr.dtype.kind == "c":
        raise dt.DtypeError(f"complex values cannot be {dtype!r} values (the imaginary part would be dropped)",
                            call=call, fix="pass array.real (or abs) explicitly")
    if dtype.kind == "int":
        if overflow in ("wrap", "saturate") and arr.dtype.kind in "iu" and arr.size:
            arr = host_wrap_or_saturate(dtype, arr, overflow)
        try:
            return dt.as_storage(dtype, arr)
        except dt.DtypeError as err:
            fix = ("round the values yourself (np.rint) and pass an integer array" if arr.dtype.kind not in "iu"
                   else f"pass values in {dtype.min}..{dtype.max}, or overflow='saturate' / 'wrap'")
            raise dt.DtypeError(err.message, call=call, fix=err.fix or fix) from None
    if arr.dtype.kind not in "biuf" and arr.dtype not in dt._ML_FLOATS:
        raise dt.DtypeError(f"{dtype!r} values must be numbers, got an array of {arr.dtype}", call=call,
                            fix="pass an int or float numpy array")
    return host_range_check(dtype, arr, call, overflow)


def host_wrap_or_saturate(dtype: type[dt.Scalar], arr: npt.NDArray[Any], overflow: str) -> npt.NDArray[Any]:
    """Integers beyond an integer ``dtype``'s range, clamped (``"saturate"``) or wrapped to its low bits
    (``"wrap"``, two's complement) — only when the caller asked (docs/manual-notes.md, "Host data")."""
    lo, hi = int(dtype.min), int(dtype.max)
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and arr.size and int(arr.max()) > 2**62:
        arr = arr.astype(object)
    v: npt.NDArray[Any] = arr.astype(np.int64) if arr.dtype != object else arr
    if overflow == "saturate":
        out: npt.NDArray[Any] = np.clip(v, lo, hi).astype(np.int64)
        return out
    modulus = 1 << (hi - lo).bit_length()
    u = np.mod(v, modulus)
    wrapped: npt.NDArray[Any] = np.where(u > hi, u - modulus, u).astype(np.int64)
    return wrapped


_CLASSES: dict[type[dt.Scalar], tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]] = {}


def _float_classes(dtype: type[dt.Scalar], out: npt.NDArray[Any]) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """Which values of ``out`` (``dtype.storage``) are finite, and which NaN: by a table of every bit pattern for
    types of at most 16 bits (a lookup, where converting fp8 back to float64 would cost more than the cast)."""
    if dtype.bits_dtype.itemsize > 2:
        return np.isfinite(out), np.isnan(out)
    got = _CLASSES.get(dtype)
    if got is None:
        every = np.arange(1 << (8 * dtype.bits_dtype.itemsize)).astype(dtype.bits_dtype).view(dtype.storage)
        with np.errstate(invalid="ignore"):  # NaN patterns convert to NaN: that is what is being classified
            wide = every.astype(np.float64)
        got = _CLASSES[dtype] = (np.isfinite(wide), np.isnan(wide))
    bits = out.view(dtype.bits_dtype)
    return got[0][bits], got[1][bits]


def host_range_check(dtype: type[dt.Scalar], arr: npt.NDArray[Any], call: str, overflow: str) -> npt.NDArray[Any]:
    """Float host values into a float ``dtype``, rounded to nearest (ties to even), refusing what the cast would
    turn into a number that is not the value: a finite value whose rounding overflows ``dtype`` (to ±inf, or to
    NaN in f8e4m3) and an infinity where ``dtype`` has none.  ``overflow`` converts them instead:
    ``"saturate"`` clamps to ±``dtype.max``; ``"inf"`` / ``"nan"`` give what the plain cast gives (where the type
    has it).  Kept apart from :mod:`visa.dtypes`' conversions, which it only calls."""
    f: Any = dtype
    if overflow == "wrap":
        raise dt.DtypeError(f"overflow='wrap' applies to integer types, not {dtype!r}", call=call,
                            fix="pass overflow='saturate', or 'inf' / 'nan'")
    if overflow in ("inf", "nan") and not f.has_nan:  # E2M1: no infinity, no NaN (and numpy's cast would
        raise dt.DtypeError(f"{dtype!r} has no infinity and no NaN", call=call,  # saturate silently)
                            fix="pass overflow='saturate' or leave overflow='error'")
    if overflow == "inf" and not f.has_inf:
        raise dt.DtypeError(f"{dtype!r} has no infinity (seed 000: E4M3FN)", call=call,
                            fix="pass overflow='nan' or 'saturate'")
    if not f.has_nan:
        try:
            return dt.encode_nearest(f, np.asarray(arr, dtype=np.float64), "error" if overflow == "error"
                                     else "saturate")
        except dt.DtypeError as err:
            raise dt.DtypeError(err.message, call=call, fix="scale the data, or pass overflow='saturate'"
                                if "NaN" not in err.message else "replace NaN first") from None
    if (arr.dtype == dtype.storage and 8 * dtype.storage.itemsize == dtype.bits
            and (overflow != "saturate" or not f.has_inf)):
        return arr  # values of the type already (its storage holds exactly its values): nothing to round or refuse
    if arr.dtype.kind in "iu" and arr.size and (int(arr.max()) > 2**53 or int(arr.min()) < -(2**53)):
        raise dt.DtypeError(f"integer values beyond ±2**53 are not rounded exactly to {dtype!r}", call=call,
                            fix="convert them to floats yourself first")
    with np.errstate(over="ignore", invalid="ignore"):
        # float32 input rounds to the type exactly as its float64 values do (one rounding either way); narrower
        # floats are widened (a float16 array would clip to bounds rounded to float16: ±inf for f32 and bf16)
        x = arr if arr.dtype == np.float32 else arr.astype(np.float64)
        if overflow == "saturate":
            x = np.clip(x, -float(f.max), float(f.max))  # ±inf clamp too; NaN stays NaN
        out = x.astype(dtype.storage)
    finite_out, nan_out = _float_classes(dtype, out)
    # (a finite long double beyond float64's range is finite input that overflows, not an infinity)
    finite_in = np.isfinite(arr) if arr.dtype.kind == "f" and arr.dtype.itemsize > 8 else np.isfinite(x)
    bad = (finite_in & ~finite_out) | (np.isinf(x) & nan_out)
    if overflow == "error" and bad.any():
        first = arr[bad].flat[0]
        kind = "an infinity, which it does not have" if not np.isfinite(first) else \
            f"{'NaN' if not f.has_inf else '±inf'} (its range is ±{float(f.max):g})"
        shown = str(first) if arr.dtype.kind == "f" and arr.dtype.itemsize > 8 else repr(float(first))
        raise dt.DtypeError(f"value {shown} does not fit {dtype!r}: the cast would give {kind}", call=call,
                            fix="scale the data, or pass overflow='saturate' (clamp to the range ends)"
                            + (" or overflow='inf'" if f.has_inf else " or overflow='nan'"))
    if overflow == "inf" and (np.isinf(x) & (finite_out | nan_out)).any():  # cannot happen: inf types keep inf
        raise dt.DtypeError(f"{dtype!r} lost an infinity", call=call)  # pragma: no cover
    return out


def _logical_shape(mappings: Sequence[Mapping], axes: str | Sequence[str] | None) -> tuple[list[str], tuple[int, ...]]:
    """The axis order and numpy shape of the logical tensor that a buffer with these level mappings holds."""
    order = logical_axes(mappings, axes)
    sizes = _sizes(mappings)
    return order, tuple(sizes[a] for a in order)


def _logical(dtype: type[dt.Scalar], mappings: Sequence[Mapping], axes: str | Sequence[str] | None,
             read: Any, call: str, name: str = "") -> npt.NDArray[Any]:
    """Read the logical tensor held by a buffer whose levels are ``mappings`` (outermost first)."""
    order, shape = _logical_shape(mappings, axes)
    nd = len(shape)
    # open grids (axis k's coordinate varies along dimension k only): the inverse broadcasts them
    coords = {a: np.arange(shape[k], dtype=np.int64).reshape([-1 if j == k else 1 for j in range(nd)])
              for k, a in enumerate(order)}
    n = int(np.prod(shape)) if shape else 1
    # the levels together are one buffer (their pair): locate there, then split the position per level
    joint = pair_of(*mappings)
    found, inside = joint.locate(coords, shape)
    flat = np.broadcast_to(found, shape).reshape(-1)
    held = np.broadcast_to(inside, shape).reshape(-1)

    def index(k: int) -> str:
        at = np.unravel_index(k, shape)
        return ", ".join(f"{a}: {int(at[j])}" for j, a in enumerate(order))

    positions: list[IntArray] = []
    for mp in reversed(mappings):
        positions.append(flat % mp.size)
        flat = flat // mp.size
    positions.reverse()
    if not held.all():
        where = index(int(np.argmin(held)))
        raise LayoutError(f"the buffer does not hold index {{{where}}}", call=call, level="Element",
                          mapping=", ".join(repr(mp) for mp in mappings),
                          fix="read the tensor through mappings that hold every index (a tile holds part of it)")
    vals, known = read(positions)
    if not all_true(known):
        where = index(int(np.argmin(np.broadcast_to(known, (n,)))))
        count = int(np.size(known) - np.count_nonzero(known))
        raise PoisonError(f"{count} element(s) of {name or 'the result'} were never written, e.g. index "
                          f"{{{where}}}", call=call,
                          fix="check that every element is written (unmasked padding or a missing slice leaves poison)")
    return np.asarray(vals, dtype=dtype.storage).reshape(shape)


def _check_context_type(ctx: object, call: str) -> None:
    """Refuse anything but a device (a :class:`~visa.context.Context`, by the :class:`~visa.tensors.device.Device`
    protocol: this layer names no host class) where a tensor needs its device."""
    global _DEVICE_MEMBERS
    if _DEVICE_MEMBERS is None:
        from visa.tensors.device import Device

        _DEVICE_MEMBERS = (*Device.__annotations__,
                           *(n for n, v in vars(Device).items() if callable(v) and not n.startswith("_")))
    # what isinstance(ctx, Device) asks (each member present), without typing's protocol check (~20 µs a tensor)
    if not all(hasattr(ctx, name) for name in _DEVICE_MEMBERS):
        raise wrong_type("ctx", ctx, "a Context (Context.acquire())", call=call)


#: The members of the :class:`~visa.tensors.device.Device` protocol (found at the first check).
_DEVICE_MEMBERS: tuple[str, ...] | None = None

#: The size of :data:`_PLACED` and :data:`_DESCRIBED` (cleared when full).
_MEMO_LIMIT = 4096
#: The placements :func:`~visa.memory.layout.check_placement` accepted (issue 24, a register load's handle at every
#: pass): it is a pure function of the hardware profile (kept in the value: its id is in the key), the memory, the
#: dtype, the level mappings (their exact keys: sizes included), the address, the chip count and the TRF half.
_PLACED: dict[tuple[Any, ...], Any] = {}
#: :meth:`DeviceTensor.describe` per memory, dtype, address and level mappings (by identity; the mappings are kept
#: in the value): a mapping is immutable, its ``repr`` too.
_DESCRIBED: dict[tuple[Any, ...], tuple[tuple[Mapping, ...], str]] = {}
#: What a new handle of an accepted placement derives from it (issue 24: a register load's handle at every pass):
#: the placement check passed, its chips, bytes, :meth:`DeviceTensor.describe` text, rows and units — pure functions
#: of the memory, the hardware profile, dtype, address, chip count, TRF half and the level mappings (by identity: the
#: profile and the mappings are kept in the value, so their ids name no other object meanwhile; both immutable).
_CREATED: dict[tuple[Any, ...], tuple[Any, tuple[Mapping, ...], frozenset[int], int, str, frozenset[int] | None,
                                      int]] = {}


def _check_placement(hw: Any, memory: str, dtype: type[dt.Scalar], levels: dict[str, Mapping], address: int,
                     num_chips: int | None, trf_half: bool, call: str | None) -> None:
    """:func:`~visa.memory.layout.check_placement` (manual L1070–1093), asked once per placement it accepts
    (:data:`_PLACED`; a refused one is asked again, and raises again)."""
    key: tuple[Any, ...] | None = None
    if type(address) is int and all(type(m) is Mapping for m in levels.values()):
        key = (id(hw), memory, dtype, address, num_chips, trf_half, *[(k, m.key) for k, m in levels.items()])
        if _PLACED.get(key) is hw:
            return
    check_placement(hw, memory, dtype, levels, address, num_chips=num_chips, trf_half=trf_half, call=call)
    if key is not None:
        if len(_PLACED) >= _MEMO_LIMIT:
            _PLACED.clear()
        _PLACED[key] = hw


class DeviceTensor:
    """Common part of the device tensor handles: dtype, level mappings, byte address, device (manual
    L1029–1093)."""

    __slots__ = ("ctx", "dtype", "levels", "address", "region", "ready_at", "_alias", "origin", "_span",
                 "__weakref__")
    MEMORY: ClassVar[str] = ""

    def __init__(self, ctx: Device, dtype: type[dt.Scalar], levels: dict[str, Mapping], address: int,
                 *, register: bool = True, reads: tuple[Region, ...] = (), call: str = "", trf_half: bool = False,
                 ready_at: int = 0) -> None:
        _check_context_type(ctx, call or self.type_name())
        dtype = expect_dtype(dtype, "dtype", call=call or self.type_name())
        self.origin = call  # the operation that created the tensor (named when a read finds poison)
        self.ctx = ctx
        self.dtype = dtype
        self.levels = levels
        self.address = address
        self.ready_at = ready_at
        self.region: Region | None = None
        self._alias: DeviceTensor | None = None
        #: the schedule's footprint of the whole tensor, with the placement it was derived from
        #: (:func:`visa.schedule.footprints.span_of`)
        self._span: tuple[Any, ...] | None = None
        hw, num_chips = ctx.hw, ctx.num_chips
        maps = tuple(levels.values())
        # (only an int address is looked up: 4096.0 == 4096 as a key, and a float must meet the check every time)
        exact = type(address) is int and all(type(m) is Mapping for m in maps)
        key = (self.MEMORY, id(hw), dtype, address, num_chips, trf_half, tuple(levels), *map(id, maps))
        got = _CREATED.get(key) if exact else None
        if got is None or got[0] is not hw or not all(a is b for a, b in zip(got[1], maps, strict=True)):
            _check_placement(hw, self.MEMORY, dtype, levels, address if self.MEMORY != "trf" else 0,
                             num_chips, trf_half, call or None)
            got = (hw, maps, frozenset(range(levels["Chip"].size)), element_bytes(dtype, levels["Element"].size),
                   self.describe(), frozenset(range(levels["Row"].size)) if "Row" in levels else None,
                   units_of(levels, hw.dm.slices_per_cluster) if "Slice" in levels else -1)
            if exact:
                if len(_CREATED) >= _MEMO_LIMIT:
                    _CREATED.clear()
                _CREATED[key] = got
        if register:
            _, _, chips, nbytes, name, rows, units = got
            self.region = ctx.memory.registry.allocate(
                self, self.MEMORY, chips, address, address + nbytes, name, reads=reads, call=call, rows=rows,
                units=units)

    def type_name(self) -> str:
        """``"DmTensor"``, ``"HbmTensor"``, ... (the manual's type, L1033–1069)."""
        return TYPE_NAMES[self.MEMORY]

    def describe(self) -> str:
        """``DmTensor[i32, m["1"], ...] @ 4096``."""
        names = LEVELS[self.MEMORY]
        levels = tuple(self.levels[k] for k in names)
        key = (self.MEMORY, self.dtype, self.address, *map(id, levels))
        got = _DESCRIBED.get(key)
        if got is not None and all(a is b for a, b in zip(got[0], levels, strict=True)):
            return got[1]
        inner = ", ".join([repr(self.dtype), *(repr(m) for m in levels)])
        text = f"{self.type_name()}[{inner}] @ {self.address}"
        if len(_DESCRIBED) >= _MEMO_LIMIT:
            _DESCRIBED.clear()
        _DESCRIBED[key] = (levels, text)  # (the mappings kept with it: their ids name no other mapping meanwhile)
        return text

    def __repr__(self) -> str:
        return self.describe()

    def _repr_html_(self) -> str:
        """The tensor in a notebook: its type, address, bytes and a row per level (:mod:`visa.tensors.show`)."""
        from visa.tensors.show import device_html

        return device_html(self)

    def mapping(self, level: str) -> Mapping:
        """The mapping of one level (``"Chip"``, ``"Element"``, ...)."""
        return self.levels[level]

    def relabel(self, **levels: Mapping) -> Any:
        """The same bytes read through other mappings of the same sizes, e.g. ``t.relabel(Element=m["R, C"])``
        to see an axis of 64 as 8 × 8 (a "reshape (noop)", manual L8056): metadata only, nothing moves.

        The handle shares this tensor's bytes (and keeps it alive); a write over them makes both stale.
        """
        new = dict(self.levels)
        for name, mp in levels.items():
            expect_mapping(mp, name, call="relabel", level=name)
            if name not in new:
                raise LayoutError(f"{self.type_name()} has no level {name} (levels: {', '.join(self.levels)})",
                                  call="relabel", level=name, mapping=repr(mp),
                                  fix=f"relabel one of {', '.join(self.levels)}")
            old = new[name]
            if mp.size != old.size:
                raise LayoutError(f"{name} {mp!r} has size {mp.size}, but {old!r} has {old.size}: a relabelling "
                                  "keeps every level's size (the bytes do not move)", call="relabel", level=name,
                                  mapping=repr(mp), fix="keep the size, or move the tensor with a DMA")
            new[name] = mp
        out = object.__new__(type(self))
        for slot in ("ctx", "dtype", "address", "region", "ready_at", "origin"):
            object.__setattr__(out, slot, getattr(self, slot))
        for extra in getattr(type(self), "__slots__", ()):
            if extra not in ("__weakref__",) and hasattr(self, extra):
                object.__setattr__(out, extra, getattr(self, extra))
        out.levels = new
        out._alias = self
        out._span = None
        return out

    def check_readable(self, call: str) -> None:
        """Refuse to read this tensor if another write overwrote its bytes."""
        if self.region is not None:
            self.ctx.memory.registry.check_readable(self.region, call=call)

    def check_context(self, ctx: Device, call: str) -> None:
        """Refuse to use this tensor in an operation of another context: each context is its own device, with
        its own memories (manual ``Context::acquire()``, L39); or after ``free()`` (every use, read or write)."""
        if self.region is not None:
            self.ctx.memory.registry.check_live(self.region, call=call)
        if self.ctx is not ctx:
            raise VisaError(f"{self.describe()} belongs to another context; an operation reads and writes the "
                            "memories of its own context only", call=call,
                            fix="move the tensor through the host, or use the context that made it")
        self.check_chips(ctx, call)

    def check_chips(self, ctx: Device, call: str) -> None:
        """Refuse a tensor laid out over other chips than the running kernel's: a chip's engines touch only
        that chip's memories, other chips only through DMA/PCIe (manual L1079, L2389)."""
        n = ctx.num_chips
        chip = self.levels["Chip"]
        if n is not None and chip.size != n:
            raise LayoutError(f"{self.describe()} spans chips 0..{chip.size - 1}, but the kernel runs on {n} "
                              f"chip(s) (@device(chip={n})): chip {n if chip.size > n else chip.size - 1} is "
                              "not the kernel's (manual L1079)", call=call, level="Chip", mapping=repr(chip),
                              axis=", ".join(sorted(chip.axes)) or None,
                              fix=f"lay the tensor over the kernel's {n} chip(s), or run the kernel on "
                                  f"{chip.size} (@device(chip={chip.size}))")

    def free(self) -> None:
        """Release the tensor's bytes explicitly (dropping the last reference does the same).  The handle, and
        every alias of it, is refused from then on: its bytes may hold another tensor (issue 23)."""
        if self.region is not None:
            self.ctx.memory.registry.release(self.region)

    # -- direct access, for host-side checks and tests (no cost, no schedule) ------------------------------
    def image(self, chip: int) -> DenseImage | PagedImage:
        """The byte image of this tensor's memory on ``chip`` (manual L134–140)."""
        raise NotImplementedError

    def element_bit_offset(self) -> int:
        """Bit offset of element 0 within one unit (chip for HBM, slice for DM/VRF, row for TRF)."""
        return self.address * 8

    def logical(self, axes: str | Sequence[str] | None = None) -> npt.NDArray[Any]:
        """The tensor this buffer holds, read directly (for tests and debugging; raises on poison)."""
        names = LEVELS[self.MEMORY]
        maps = [self.levels[n] for n in names]
        self.check_readable(f"{self.type_name()}.logical")

        def read(positions: list[IntArray]) -> tuple[npt.NDArray[Any], BoolArray]:
            vals = np.zeros(positions[0].shape, dtype=self.dtype.storage)
            known = np.zeros(positions[0].shape, dtype=bool)
            chips = positions[0]
            one = chips.size == 0 or int(chips.min()) == int(chips.max())
            for c in ([int(chips.flat[0])] if chips.size else []) if one else np.unique(chips).tolist():
                sel: Any = slice(None) if one else chips == c
                img = self.image(int(c))
                bits = self.element_bit_offset() + positions[-1][sel] * self.dtype.image_bits
                if isinstance(img, PagedImage):
                    v, k = load(self.dtype, img, bits)
                else:  # one flat image: unit u's bit b is at (u · nbytes) · 8 + b
                    lead = tuple(p[sel] for p in positions[1:-1])
                    unit = np.ravel_multi_index(lead, img.lead_shape) if lead else np.zeros_like(bits)
                    v, k = load(self.dtype, img.flat_image(), unit * (img.nbytes * 8) + bits)
                vals[sel] = v
                known[sel] = k
            return vals, known

        return _logical(self.dtype, maps, axes, read, f"{self.type_name()}.logical",
                        name=self.describe() + _origin(self.origin))


class _InPlaceWrites:
    """The in-place DMAs of an HBM or DM tensor, or of the tensor a view holds (the source's side)."""

    __slots__ = ()

    def to_hbm_view(self, target: HbmTensorView | ScatterTarget, tdma: DmaContext, *,
                    stream: Stream | None = None) -> HbmTensor[Any, Any, Any]:
        """Tensor DMA into part of a live HBM tensor, in place (KV-cache append, manual L8286–8297):
        ``target`` is a view or tile of it, or ``view.scatter(m["V"], ids)``.  Returns the
        written tensor, which stays live and current."""
        import visa.tensors.indirect as im

        out: HbmTensor[Any, Any, Any] = im.to_view(self, target, "hbm", tdma, stream=stream)
        return out

    def to_dm_view(self, target: DmTensorView | ScatterTarget, tdma: DmaContext, *,
                   stream: Stream | None = None) -> DmTensor[Any, Any, Any, Any, Any]:
        """Tensor DMA into part of a live DM tensor, in place (as :meth:`to_hbm_view`)."""
        import visa.tensors.indirect as im

        out: DmTensor[Any, Any, Any, Any, Any] = im.to_view(self, target, "dm", tdma, stream=stream)
        return out


class _HbmMoves(_InPlaceWrites):
    """The DMAs out of an HBM tensor, or out of the tensor an HBM view (a tile) holds."""

    __slots__ = ()

    def to_dm(self, cluster: Mapping, slice_: Mapping, element: Mapping, tdma: DmaContext,
              address: int, *, stream: Streams | None = None) -> DmTensor[Any, Any, Any, Any, Any]:
        """Tensor DMA from HBM to DM (manual L1188–1193, L2375–2384); Chip is kept."""
        import visa.tensors.moves as dma

        src: Any = self
        return dma.hbm_to_dm(src, cluster, slice_, element, tdma, address, stream=stream)

    def to_hbm(self, chip: Mapping, element: Mapping, tdma: DmaContext, address: int, *,
               stream: Streams | None = None) -> HbmTensor[Any, Any, Any]:
        """Tensor DMA from HBM to a new HBM tensor with a new layout (manual L2431–2464)."""
        import visa.tensors.moves as dma

        src: Any = self
        return dma.hbm_to_hbm(src, chip, element, tdma, address, stream=stream)

    def to_host(self, element: Mapping, pdma: DmaContext, *, stream: Stream | None = None) -> HostTensor[Any, Any]:
        """PCIe DMA back to the host (manual L197): a host buffer laid out as ``element``."""
        import visa.tensors.moves as dma

        src: Any = self
        return dma.hbm_to_host(src, element, pdma, stream=stream)


class _DmMoves(_InPlaceWrites):
    """The DMAs out of a DM tensor, or out of the tensor a DM view holds."""

    __slots__ = ()

    def to_hbm(self, element: Mapping, tdma: DmaContext, address: int, *,
               stream: Streams | None = None) -> HbmTensor[Any, Any, Any]:
        """Tensor DMA from DM back to HBM (manual L217); Chip is kept, Cluster and Slice fold into HBM."""
        import visa.tensors.moves as dma

        src: Any = self
        return dma.dm_to_hbm(src, element, tdma, address, stream=stream)

    def to_spm(self, pe: Mapping, element: Mapping, tdma: DmaContext, address: int) -> Any:
        """Tensor DMA from DM into a new ``SpmTensor`` (Chip and Cluster kept; 4 KiB per PE, design API.md §8):
        gather and scatter indices may then be read from SPM (:mod:`visa.tensors.spm`)."""
        from visa.tensors.spm import dm_to_spm

        return dm_to_spm(self, pe, element, tdma, address)

    def to_dm(self, cluster: Mapping, slice_: Mapping, element: Mapping, tdma: DmaContext,
              address: int, *, stream: Streams | None = None) -> DmTensor[Any, Any, Any, Any, Any]:
        """Tensor DMA from DM to a new DM tensor with a new layout (manual L2659–2681)."""
        import visa.tensors.moves as dma

        src: Any = self
        return dma.dm_to_dm(src, cluster, slice_, element, tdma, address, stream=stream)


class HbmTensor(DeviceTensor, _HbmMoves, Generic[D, Chip, Element]):
    """``HbmTensor<D, Chip, Element>``: chip i's element j holds T at ``Chip.map(i) ∪ Element.map(j)`` (L1064)."""

    __slots__ = ()
    MEMORY = "hbm"

    def __init__(self, ctx: Device, dtype: type[D], chip: Mapping, element: Mapping, address: int, **kw: Any) -> None:
        super().__init__(ctx, dtype, {"Chip": chip, "Element": element}, address, **kw)

    @classmethod
    def from_addr(cls, ctx: Device, dtype: type[D], chip: Mapping, element: Mapping,
                  address: int) -> HbmTensor[D, Any, Any]:
        """``unsafe { HbmTensor::from_addr(addr) }`` (manual L821): a handle over bytes already in HBM.

        Nothing is allocated or checked for liveness; the placement rules still apply."""
        return cls(ctx, dtype, chip, element, address, register=False)

    def image(self, chip: int) -> PagedImage:
        return self.ctx.memory.chip(chip).hbm

    @property
    def chip(self) -> Mapping:
        """The Chip mapping (manual L1064)."""
        return self.levels["Chip"]

    @property
    def element(self) -> Mapping:
        """The Element mapping (manual L1064)."""
        return self.levels["Element"]

    def view(self) -> HbmTensorView[D, Chip, Element]:
        """A metadata view of the whole tensor (manual L823)."""
        return HbmTensorView(self, self.levels["Element"], 0)


class DmTensor(DeviceTensor, _DmMoves, Generic[D, Chip, Cluster, Slice, Element]):
    """``DmTensor<D, Chip, Cluster, Slice, Element>`` in on-chip SRAM (manual L1049, L1085–1093)."""

    __slots__ = ()
    MEMORY = "dm"

    def __init__(self, ctx: Device, dtype: type[D], chip: Mapping, cluster: Mapping, slice_: Mapping,
                 element: Mapping, address: int, **kw: Any) -> None:
        super().__init__(ctx, dtype, {"Chip": chip, "Cluster": cluster, "Slice": slice_, "Element": element},
                         address, **kw)

    def image(self, chip: int) -> DenseImage:
        return self.ctx.memory.chip(chip).dm

    def view(self) -> DmTensorView[D, Chip, Cluster, Slice, Element]:
        """A metadata view of the whole tensor (what ``ctx.main.begin`` takes, manual L1866)."""
        return DmTensorView(self, self.levels["Element"], 0)

    @classmethod
    def from_addr(cls, ctx: Device, dtype: type[D], chip: Mapping, cluster: Mapping, slice_: Mapping,
                  element: Mapping, address: int) -> DmTensor[D, Any, Any, Any, Any]:
        """A handle over bytes already in DM (as ``HbmTensor.from_addr``, manual L821); nothing is allocated."""
        return cls(ctx, dtype, chip, cluster, slice_, element, address, register=False)

    def asymmetric_chip_slice(self, digit: Mapping, sub: TuHandle, indices: Sequence[int],
                              address: int) -> DmTensor[Any, Any, Any, Any, Any]:
        """Asymmetric Slice by ParallelCopy in the sub context (manual L7400–7441, L7603–7606): a new DM tensor
        whose Element lacks ``digit``; chip c keeps entry ``indices[c]`` of it."""
        from visa.tensors.collective import asymmetric_slice

        return asymmetric_slice(self, digit, sub, indices, address, "chip")

    def asymmetric_cluster_slice(self, digit: Mapping, sub: TuHandle, indices: Sequence[int],
                                 address: int) -> DmTensor[Any, Any, Any, Any, Any]:
        """As :meth:`asymmetric_chip_slice`, per cluster: cluster k keeps entry ``indices[k]``."""
        from visa.tensors.collective import asymmetric_slice

        return asymmetric_slice(self, digit, sub, indices, address, "cluster")

    def plot_layout(self, *, slices: int = 64) -> Any:
        """A matplotlib ``Figure``: which slice and DM address holds which element (a row per slice holding data,
        a column per element position, coloured by the tensor index; :func:`visa.tensors.show.plot_layout`;
        ``pip install 'tcp-visa[plot]'``)."""
        from visa.tensors.show import plot_layout

        return plot_layout(self, slices=slices)


class TrfTensor(DeviceTensor, Generic[D, Chip, Cluster, Slice, Row, Element]):
    """``TrfTensor<D, Chip, Cluster, Slice, Row, Element>``: Contraction Engine weights (manual L1053, L4055)."""

    __slots__ = ("trf_address",)
    MEMORY = "trf"

    def __init__(self, ctx: Device, dtype: type[D], chip: Mapping, cluster: Mapping, slice_: Mapping, row: Mapping,
                 element: Mapping, trf_address: TrfAddress, **kw: Any) -> None:
        _check_context_type(ctx, kw.get("call") or "TrfTensor")
        expect_instance(trf_address, TrfAddress, "trf_address", call=kw.get("call") or "TrfTensor",
                        expected="a TrfAddress (Full, FirstHalf or SecondHalf)")
        self.trf_address = trf_address
        byte = trf_address.offset_halves * ctx.hw.trf.half_row_bytes
        super().__init__(ctx, dtype, {"Chip": chip, "Cluster": cluster, "Slice": slice_, "Row": row,
                                      "Element": element}, byte, trf_half=trf_address.half, **kw)

    def image(self, chip: int) -> DenseImage:
        return self.ctx.memory.chip(chip).trf

    def element_bit_offset(self) -> int:
        # the image gives each element its image width; the address counts size_bits
        return self.address * 8 * self.dtype.image_bits // self.dtype.size_bits


class VrfTensor(DeviceTensor, Generic[D, Chip, Cluster, Slice, Element]):
    """``VrfTensor<D, Chip, Cluster, Slice, Element>``: Vector Engine operands (manual L1057, L1090)."""

    __slots__ = ()
    MEMORY = "vrf"

    def __init__(self, ctx: Device, dtype: type[D], chip: Mapping, cluster: Mapping, slice_: Mapping,
                 element: Mapping, address: int, **kw: Any) -> None:
        super().__init__(ctx, dtype, {"Chip": chip, "Cluster": cluster, "Slice": slice_, "Element": element},
                         address, **kw)

    def image(self, chip: int) -> DenseImage:
        return self.ctx.memory.chip(chip).vrf


class TensorView:
    """A metadata view: a base tensor, the Element mapping seen through the view, and an element offset.

    ``tile(dim, size, tile_mapping, start)`` resizes dimension ``dim`` to ``size`` starting at index ``start``
    of ``dim`` (manual L813–832, L955–970); tiles may overlap.  No data moves.
    """

    __slots__ = ("base", "element", "offset", "reach", "depends")

    def __init__(self, base: DeviceTensor, element: Mapping, offset: int, *, reach: tuple[int, ...] | None = None,
                 depends: tuple[Any, ...] = ()) -> None:
        self.base = base
        self.element = element
        self.offset = offset
        #: a tile whose start is a runtime scalar: every element offset the view could start at (its footprint on
        #: the schedule covers them all), and the device scalars the start reads (design API.md §8)
        self.reach = reach
        self.depends = depends

    @property
    def dtype(self) -> type[dt.Scalar]:
        """The base tensor's element type."""
        return self.base.dtype

    @property
    def address(self) -> int:
        """Byte address of the view's element 0."""
        return self.base.address + (self.offset * self.base.dtype.size_bits) // 8

    def level(self, name: str) -> Mapping:
        """The mapping of one level: the view's Element, the base's others."""
        return self.element if name == "Element" else self.base.levels[name]

    @property
    def levels(self) -> dict[str, Mapping]:
        """The level mappings seen through the view."""
        return {**self.base.levels, "Element": self.element}

    def relabel(self, element: Mapping) -> Self:
        """The same positions read through another Element mapping of the same size (metadata only, a "reshape
        (noop)", manual L8056)."""
        element = expect_mapping(element, "element", call="relabel", level="Element")
        if element.size != self.element.size:
            raise LayoutError(f"Element {element!r} has size {element.size}, but the view's {self.element!r} has "
                              f"{self.element.size}: a relabelling keeps the size", call="relabel", level="Element",
                              mapping=repr(element), fix="keep the size, or move the tensor with a DMA")
        return type(self)(self.base, element, self.offset, reach=self.reach, depends=self.depends)

    def chip_shuffle(self, perm: Sequence[int]) -> ShuffledSource[Self]:
        """ChipShuffle(p) staged on the view (manual L7445–7470): destination chip c receives
        what chip ``perm[c]`` held (L7541); ``.to_hbm(...)`` / ``.to_dm(...)`` moves it."""
        from visa.tensors.collective import ShuffledSource

        return ShuffledSource.stage(self, perm=perm)

    def cluster_swap(self) -> ShuffledSource[Self]:
        """The cluster swap staged on a DM view (cluster 0 ↔ cluster 1)."""
        from visa.tensors.collective import ShuffledSource

        return ShuffledSource.stage(self, swap=True)

    def chip_slice(self, digit: Mapping, element: Mapping, indices: Sequence[int]) -> ShuffledSource[Self]:
        """A slice staged on the view (design API.md §8, a reference extension): chip c keeps entry
        ``indices[c]`` of ``digit``, the staged Element is ``element``; ``.to_dm(...)`` / ``.to_dm_view(...)``
        moves it in one DMA (:mod:`visa.engines.dma.slicing`)."""
        from visa.tensors.collective import ShuffledSource

        return ShuffledSource.stage(self, plain=True).chip_slice(digit, element, indices)

    def cluster_slice(self, digit: Mapping, element: Mapping, indices: Sequence[int]) -> ShuffledSource[Self]:
        """As :meth:`chip_slice`, per cluster of a DM view: cluster k keeps entry ``indices[k]``."""
        from visa.tensors.collective import ShuffledSource

        return ShuffledSource.stage(self, plain=True).cluster_slice(digit, element, indices)

    def tile(self, dim: Mapping, size: int, tile_mapping: Mapping, start: Any) -> Self:
        """The tile of ``size`` indices of ``dim`` from ``start``, seen through ``tile_mapping``.

        ``start`` may be a device scalar staged in SPM, or an expression on one (``start=s * 2``; design API.md
        §8, a runtime-indexed copy): the address is computed at run time from its value (a start that runs past
        ``dim`` is refused then), and the schedule records every tile the scalar could reach
        (:mod:`visa.tensors.runtime_tile`)."""
        from visa.tensors.scalar import is_scalar

        call = f"{type(self).__name__}.tile"
        if is_scalar(start):
            from visa.tensors.runtime_tile import runtime_tile

            offset, reach, depends = runtime_tile(self, dim, size, tile_mapping, start, call)
            return type(self)(self.base, tile_mapping, self.offset + offset, reach=reach,
                              depends=self.depends + depends)
        at = tile_offset(self.element, dim, size, tile_mapping, start, call)
        shifted = None if self.reach is None else tuple(r + at for r in self.reach)
        return type(self)(self.base, tile_mapping, self.offset + at, reach=shifted, depends=self.depends)

    def as_tensor(self) -> Any:
        """The view as a tensor handle of its own — its Element, at its address — sharing the base's bytes, region
        and ready time (metadata only, as :meth:`DeviceTensor.relabel`).  A one-element tile so becomes the
        indices of a gather or the scalar of a guard without a DMA: the expert id of one MoE block
        (``Expert_IDs[g]``, manual L8676–8681, L8616)."""
        alias = self.base.relabel()
        object.__setattr__(alias, "levels", {**self.base.levels, "Element": self.element})
        object.__setattr__(alias, "address", self.address)
        return alias

    def gather(self, axis: Mapping, ids: DeviceTensor) -> GatherSource:
        """The rows ``ids[t]`` of ``axis`` (an axis of the Element) as a staged source: ``.to_dm(...)`` /
        ``.to_hbm(...)`` make ``out[t, …] = self[ids[t], …]`` (IndirectLoop, manual L1684–1688).
        ``ids`` is an i32 HBM or DM tensor over its own axes, which the destination names in place of ``axis``."""
        from visa.tensors.indirect import GatherSource

        return GatherSource(self, axis, ids)

    def scatter(self, axis: Mapping, ids: DeviceTensor) -> ScatterTarget:
        """This view as a staged scatter destination: ``src.to_hbm_view(view.scatter(m["V"], ids), ctx.tdma)``
        writes ``self[ids[t], …] = src[t, …]`` in place (IndirectLoop, L1684–1688; MoE dispatch L8664–8690).
        Repeated or out-of-range indices are refused before anything is written."""
        from visa.tensors.indirect import ScatterTarget

        return ScatterTarget(self, axis, ids)

    def memset(self, value: int | float, ctx: TuHandle | DmaContext) -> Any:
        """Set every byte of the view to ``value``'s image, in place (design API.md §8, a reference extension):
        ``ctx.sub`` fills a DM view with 8-byte words (L2330), ``ctx.tdma`` fills an HBM or DM view as a DMA
        writes (L2424–2427).  Returns the view's tensor, live and current (:mod:`visa.tensors.fill`)."""
        from visa.tensors.fill import memset

        return memset(self, value, ctx)

    def _bitcast(self, dtype: Any) -> Any:
        """The same bits read as ``dtype`` (:func:`check_bitcast`): a view of an alias handle of the base that
        shares its bytes, its region and its ready time (as :meth:`DeviceTensor.relabel`)."""
        new = expect_dtype(dtype, "dtype", call="bitcast")
        check_bitcast(self.base.dtype, new, self.element)
        alias = self.base.relabel()
        object.__setattr__(alias, "dtype", new)
        return type(self)(alias, self.element, self.offset, reach=self.reach, depends=self.depends)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base.describe()}, {self.element!r} + {self.offset})"


def check_bitcast(src: type[dt.Scalar], dst: type[dt.Scalar], element: Mapping | None = None,
                  call: str = "bitcast") -> None:
    """``view.bitcast(D2)``: the same bits read as another element type of the same width (bf16 ↔ i16, f32 ↔ i32,
    i8 ↔ f8e4m3 …; reading bf16 bits as an integer, manual L8547–8553, L8589).  A different width would move
    every element's bytes and is refused.  Pure (the view and the mypy plugin call it)."""
    if src.size_bits != dst.size_bits or src.image_bits != dst.image_bits:
        raise DtypeError(f"a bitcast reads the same bits as another type of the same width; {src!r} is "
                         f"{src.size_bits} bits and {dst!r} {dst.size_bits}", call=call, level="Element",
                         mapping=None if element is None else repr(element),
                         axis=None if element is None else ", ".join(sorted(element.axes)) or None, line=8589,
                         fix=f"bitcast to a {src.size_bits}-bit type, or convert the values with a cast")


class HbmTensorView(TensorView, _HbmMoves, Generic[VD, VChip, VElement]):
    """``HbmTensorView<'_, D, Chip, Element>`` (manual L823); a tile moves like a tensor."""

    __slots__ = ()

    def bitcast(self, dtype: type[VD2]) -> HbmTensorView[VD2, VChip, VElement]:
        """The view's bits read as ``dtype`` of the same width (:func:`check_bitcast`; L8547–8553, L8589)."""
        out: HbmTensorView[VD2, VChip, VElement] = self._bitcast(dtype)
        return out


class DmTensorView(TensorView, _DmMoves, Generic[VD, VChip, VCluster, VSlice, VElement]):
    """``DmTensorView`` (manual L2160); ``ctx.main.begin(dm.view())`` starts a stream from it."""

    __slots__ = ()

    def bitcast(self, dtype: type[VD2]) -> DmTensorView[VD2, VChip, VCluster, VSlice, VElement]:
        """The view's bits read as ``dtype`` of the same width (:func:`check_bitcast`; L8547–8553, L8589):
        ``ctx.main.begin(scores.view().bitcast(i16))`` fetches bf16 bits as integers."""
        out: DmTensorView[VD2, VChip, VCluster, VSlice, VElement] = self._bitcast(dtype)
        return out
