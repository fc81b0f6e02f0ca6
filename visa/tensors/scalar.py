"""Device scalars: ``HbmScalar`` and its SPM copy (design API.md §8; the reference's ``HbmScalar<T>`` and
``to_spm``, furiosa-opt v0.9 — a reference extension, docs/manual-notes.md "issue 26").

A device scalar is one value of ``bool_``, ``i32``, ``u32``, ``i64`` or ``u64`` that the host writes between
launches and kernels read at run time: a guard's count (MoE "skip execution for empty Grids", L8616), a tile's
start (a runtime-indexed copy), a gather's valid length.

* ``HbmScalar.from_host(ctx, value, dtype, addr)`` writes it to HBM (on each of ``chips`` chips, default 1) over
  PCIe; ``s.write(value)`` rewrites it from the host between launches; ``s.read()`` reads it back;
* inside a kernel ``s.to_spm(ctx.sub)`` (or ``ctx.tdma``) stages it once into the SPM of every PE (one DMA
  command, L2467), giving an :class:`SpmScalar`;
* ``ctx.main.when(s, predicate)`` (also ``ctx.sub``, ``ctx.tdma``) reads it: from SPM a guard costs a register
  read (the SPM's 128 B/cycle, L2945: one cycle), from HBM a DMA read (~500 cycles, L2467–2469)
  (:mod:`visa.tensors.guard`);
* arithmetic (``s * 2 + 1``, ``s < 4``) makes a :class:`ScalarExpr`, evaluated on the command processor when
  it is used (not costed): a tile start (``view.tile(dim, size, mapping, start=s)``), a sparse prefix, a guard.

A scalar is not a Python number: ``if s > 0:`` is refused (the host does not know a device value); write
``if ctx.main.when(s > 0):``.
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa.errors import AddressError, AllocationError, DtypeError, LayoutError, PoisonError, TypestateError
from visa.memory.footprint import Span
from visa.tensors.device import Device, DmaContext, TuHandle
from visa.validate import expect_int, wrong_type

__all__ = ["DeviceScalar", "HbmScalar", "SpmScalar", "ScalarExpr", "ScalarLike", "scalar_value", "leaves",
           "check_scalar_value", "is_scalar"]

D = TypeVar("D", bound=dt.Scalar)


def check_scalar_value(dtype: type[dt.Scalar], value: object, call: str) -> int:
    """``value`` as a Python int that ``dtype`` (a device scalar type) holds: ``bool`` or an integer in range."""
    if dtype is dt.bool_:
        if isinstance(value, bool | np.bool_) or (isinstance(value, int | np.integer) and int(value) in (0, 1)):
            return int(bool(value))
        raise wrong_type("value", value, "a bool (True or False)", call=call)
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise wrong_type("value", value, f"an int of {dtype!r}", call=call)
    v = int(value)
    if not dtype.min <= v <= dtype.max:
        raise DtypeError(f"{v} is outside {dtype!r}'s range {int(dtype.min)}..{int(dtype.max)}", call=call,
                         fix=f"pass a value in {int(dtype.min)}..{int(dtype.max)}, or a wider scalar type")
    return v


def _device_dtype(dtype: object, call: str) -> type[dt.Scalar]:
    if isinstance(dtype, type) and dtype in dt.DEVICE_SCALARS.values():
        return dtype
    if isinstance(dtype, str) and dtype in dt.DEVICE_SCALARS:
        return dt.DEVICE_SCALARS[dtype]
    raise wrong_type("dtype", dtype, f"a device scalar type: {', '.join(dt.DEVICE_SCALARS)}", call=call,
                     fix="from visa import bool_, i32, u32, i64, u64")


class _Arith:
    """Arithmetic on device scalars builds a :class:`ScalarExpr`; a truth test is refused."""

    __slots__ = ()

    def _expr(self, op: str, other: object, swap: bool = False) -> ScalarExpr:
        a, b = (other, self) if swap else (self, other)
        return ScalarExpr(op, (a, b))

    def __add__(self, o: object) -> ScalarExpr: return self._expr("+", o)
    def __radd__(self, o: object) -> ScalarExpr: return self._expr("+", o, True)
    def __sub__(self, o: object) -> ScalarExpr: return self._expr("-", o)
    def __rsub__(self, o: object) -> ScalarExpr: return self._expr("-", o, True)
    def __mul__(self, o: object) -> ScalarExpr: return self._expr("*", o)
    def __rmul__(self, o: object) -> ScalarExpr: return self._expr("*", o, True)
    def __floordiv__(self, o: object) -> ScalarExpr: return self._expr("//", o)
    def __mod__(self, o: object) -> ScalarExpr: return self._expr("%", o)
    def __lshift__(self, o: object) -> ScalarExpr: return self._expr("<<", o)
    def __rshift__(self, o: object) -> ScalarExpr: return self._expr(">>", o)
    def __and__(self, o: object) -> ScalarExpr: return self._expr("&", o)
    def __or__(self, o: object) -> ScalarExpr: return self._expr("|", o)
    def __lt__(self, o: object) -> ScalarExpr: return self._expr("<", o)
    def __le__(self, o: object) -> ScalarExpr: return self._expr("<=", o)
    def __gt__(self, o: object) -> ScalarExpr: return self._expr(">", o)
    def __ge__(self, o: object) -> ScalarExpr: return self._expr(">=", o)
    def __neg__(self) -> ScalarExpr: return ScalarExpr("-", (0, self))

    def eq(self, o: object) -> ScalarExpr:
        """``self == o`` on the device (``==`` itself keeps Python's identity, so scalars stay hashable)."""
        return self._expr("==", o)

    def __bool__(self) -> bool:
        raise TypestateError(f"{self!r} is a device value; the host cannot branch on it", call="bool",
                             fix="write `if ctx.main.when(s > 0):` (or ctx.sub / ctx.tdma): a runtime guard")

    def __index__(self) -> int:
        raise TypestateError(f"{self!r} is a device value, not a host int", call="int",
                             fix="pass it where a runtime value is taken (tile(..., start=s), sparse_prefix(s), "
                                 "when(s, ...)), or read it on the host with s.read()")


_OPS: dict[str, Callable[[int, int], int]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod,
    "<<": operator.lshift, ">>": operator.rshift, "&": operator.and_, "|": operator.or_,
    "<": lambda a, b: int(a < b), "<=": lambda a, b: int(a <= b), ">": lambda a, b: int(a > b),
    ">=": lambda a, b: int(a >= b), "==": lambda a, b: int(a == b),
}


class ScalarExpr(_Arith):
    """An expression on device scalars and host ints (``s * 2 + 1``, ``g < s``; design API.md §8): evaluated when
    a runtime use reads it (:func:`scalar_value`)."""

    __slots__ = ("op", "args")

    def __init__(self, op: str, args: tuple[object, object]) -> None:
        for a in args:
            if not isinstance(a, DeviceScalar | ScalarExpr) and (isinstance(a, bool) or not isinstance(a, int)):
                raise wrong_type("operand", a, "an int or a device scalar", call=f"scalar {op}")
        self.op = op
        self.args = args

    def __repr__(self) -> str:
        a, b = self.args
        return f"({a!r} {self.op} {b!r})"


ScalarLike = Any  # a DeviceScalar or a ScalarExpr (typed loosely: the classes are below)


def is_scalar(x: object) -> bool:
    """Whether ``x`` is a device scalar or an expression on one."""
    return isinstance(x, DeviceScalar | ScalarExpr)


def leaves(x: object) -> list[DeviceScalar]:
    """The device scalars an expression reads (itself for a scalar)."""
    if isinstance(x, DeviceScalar):
        return [x]
    if isinstance(x, ScalarExpr):
        return [s for a in x.args for s in leaves(a)]
    return []


def scalar_value(x: object, call: str) -> int:
    """The value of a device scalar, an expression on one, or a host int."""
    if isinstance(x, DeviceScalar):
        return x._value(call)
    if isinstance(x, ScalarExpr):
        a, b = (scalar_value(v, call) for v in x.args)
        try:
            return _OPS[x.op](a, b)
        except ZeroDivisionError:
            raise AddressError(f"{x!r} divides by zero at run time", call=call,
                               fix="guard the division, or divide by a nonzero constant") from None
    if not isinstance(x, int | np.integer):
        raise wrong_type("operand", x, "an int or a device scalar", call=call)
    return int(x)


class DeviceScalar(_Arith):
    """A device scalar's bytes: ``dtype`` at byte ``address`` of ``memory`` (``"hbm"`` or ``"spm"``) on chips
    ``0 .. chips - 1`` (every PE of them for SPM)."""

    __slots__ = ("ctx", "dtype", "address", "chips", "region", "ready_at", "__weakref__")
    MEMORY: ClassVar[str] = ""

    def __init__(self, ctx: Device, dtype: type[dt.Scalar], address: int, chips: int, call: str) -> None:
        self.ctx = ctx
        self.dtype = dtype
        self.address = address
        self.chips = chips
        self.ready_at = 0
        self.region = ctx.memory.registry.allocate(self, self.MEMORY, frozenset(range(chips)), address,
                                                   address + self.nbytes, repr(self), call=call)

    @property
    def nbytes(self) -> int:
        """Bytes of the value (1 for bool_, 4 for i32/u32, 8 for i64/u64)."""
        return self.dtype.size_bits // 8

    def span(self) -> Span:
        """The bytes the scalar occupies (every PE's SPM, or each chip's HBM)."""
        units = self.ctx.hw.dm.clusters_per_chip * (self.ctx.hw.dm.slices_per_cluster // self.ctx.hw.spm.slices_per_pe)
        return Span.of(self.MEMORY, range(self.chips), [self.address], [self.address + self.nbytes],
                       units=range(units) if self.MEMORY == "spm" else -1)

    def _image(self) -> Any:
        mem = self.ctx.memory.chip(0)
        return mem.hbm if self.MEMORY == "hbm" else mem.spm

    def _bytes(self) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
        img = self._image()
        idx = np.arange(self.address, self.address + self.nbytes, dtype=np.int64)
        if self.MEMORY == "hbm":
            values, known = img.gather(idx)
            return np.asarray(values), np.asarray(known)
        values, known = img.flat_image().gather(idx)  # PE 0 of cluster 0 (every PE holds the same)
        return np.asarray(values), np.asarray(known)

    def _value(self, call: str) -> int:
        """The value its bytes hold (a :class:`~visa.errors.PoisonError` if any was never written)."""
        self.check_chips(call)
        if self.region is not None:
            self.ctx.memory.registry.check_readable(self.region, call=call)
        raw, known = self._bytes()
        if not known.all():
            raise PoisonError(f"{self!r} was never written", call=call,
                              fix="write it first (HbmScalar.from_host, .write, or .to_spm of a written one)")
        v = int.from_bytes(raw.astype(np.uint8).tobytes(), "little", signed=bool(self.dtype.signed))
        return int(bool(v)) if self.dtype is dt.bool_ else v

    def _store(self, value: int) -> None:
        raw = np.frombuffer(int(value).to_bytes(self.nbytes, "little", signed=bool(self.dtype.signed)), np.uint8)
        for c in range(self.chips):
            mem = self.ctx.memory.chip(c)
            if self.MEMORY == "hbm":
                data, known = mem.hbm.window(self.address, self.address + self.nbytes)
                data[...] = raw
                known[...] = True
            else:
                img = mem.spm
                img.flat_data(self.address, self.address + self.nbytes).reshape(-1, img.nbytes)[
                    :, self.address:self.address + self.nbytes] = raw
                img.mark_written(slice(None), self.address, self.address + self.nbytes)

    def check_chips(self, call: str) -> None:
        """In a kernel, the scalar must be on every chip the kernel runs on (L1079)."""
        n = self.ctx.num_chips
        if n is not None and n != self.chips:
            raise LayoutError(f"{self!r} is on {self.chips} chip(s), the kernel runs on {n} (manual L1079)",
                              call=call, level="Chip",
                              fix=f"make it with HbmScalar.from_host(ctx, value, dtype, addr, chips={n})")

    def __repr__(self) -> str:
        return f"{type(self).__name__}[{self.dtype!r}] @ {self.address}"


class HbmScalar(DeviceScalar, Generic[D]):
    """``HbmScalar<T>``: a scalar in HBM (design API.md §8), made and rewritten by the host."""

    __slots__ = ()
    MEMORY = "hbm"

    @classmethod
    def from_host(cls, ctx: Device, value: bool | int, dtype: type[D], address: int, *,
                  chips: int = 1) -> HbmScalar[D]:
        """Write ``value`` of ``dtype`` (``bool_``, ``i32``, ``u32``, ``i64``, ``u64``) at HBM byte ``address`` of
        chips ``0 .. chips - 1`` over PCIe (recorded on ``pdma``: one command, L2467–2469)."""
        from visa.tensors.handles import _check_context_type

        call = "HbmScalar.from_host"
        _check_context_type(ctx, call)
        d = _device_dtype(dtype, call)
        address = expect_int(address, "address", call=call, lo=0)
        chips = expect_int(chips, "chips", call=call, lo=1)
        v = check_scalar_value(d, value, call)
        if address % d.alignment:
            raise AddressError(f"address {address} is not a multiple of {d!r}'s {d.alignment} bytes (manual L1071)",
                               call=call, fix=f"use an address that is a multiple of {d.alignment}")
        out: HbmScalar[D] = cls(ctx, d, address, chips, call)
        out._host_write(v, call)
        return out

    def _host_write(self, value: int, call: str) -> None:
        from visa.engines.common import EngineReport
        from visa.engines.guard import guard_cycles

        self._store(value)
        cost = guard_cycles(self.ctx.hw, self.nbytes)
        report = EngineReport("pcie", f"write {self!r} = {value}", cost - self.ctx.hw.dma.startup_cycles,
                              latency=self.ctx.hw.dma.startup_cycles, nbytes=self.nbytes * self.chips)
        op = self.ctx.record("pdma", f"{call}({value}) → {self!r}", [report], writes=[self.span()])
        self.ready_at = op.end

    def write(self, value: bool | int) -> None:
        """Rewrite the value from the host between launches (the reference's ``HbmScalar::write``); inside a
        kernel it is refused (a kernel writes device memory through its engines)."""
        call = "HbmScalar.write"
        if self.ctx.num_chips is not None:
            raise TypestateError(f"{self!r} is written by the host between launches, not inside a kernel",
                                 call=call, fix="write it before launch(...) or after it returns")
        self._host_write(check_scalar_value(self.dtype, value, call), call)
        if self.region is not None:
            self.region.stale_by = None

    def read(self) -> bool | int:
        """The value, read back by the host over PCIe (recorded on ``pdma``)."""
        from visa.engines.common import EngineReport
        from visa.engines.guard import guard_cycles

        v = self._value("HbmScalar.read")
        cost = guard_cycles(self.ctx.hw, self.nbytes)
        report = EngineReport("pcie", f"read {self!r}", cost - self.ctx.hw.dma.startup_cycles,
                              latency=self.ctx.hw.dma.startup_cycles, nbytes=self.nbytes)
        self.ctx.record("pdma", f"HbmScalar.read({self!r})", [report], reads=[self.span()])
        return bool(v) if self.dtype is dt.bool_ else v

    def to_spm(self, ctx: TuHandle | DmaContext, address: int | None = None) -> SpmScalar[D]:
        """Stage the scalar once into the SPM of every PE (one DMA command: startup and one request, L2467–2469):
        a guard on the copy costs a register read.  ``address`` (bytes in each PE's 4 KiB) defaults to the
        lowest free 8-byte slot."""
        from visa.engines.common import EngineReport
        from visa.engines.guard import guard_cycles

        call = "HbmScalar.to_spm"
        if not isinstance(ctx, TuHandle | DmaContext) or ctx.kind not in ("sub", "tdma"):
            raise wrong_type("ctx", ctx, "ctx.sub or ctx.tdma", call=call)
        dev = ctx.ctx
        if dev is not self.ctx:
            raise TypestateError(f"{self!r} belongs to another context", call=call, fix="use the context that made it")
        v = self._value(call)
        at = _spm_slot(dev, self.chips, self.nbytes, address, call)
        out: SpmScalar[D] = SpmScalar(dev, self.dtype, at, self.chips, call)
        out._store(v)
        cost = guard_cycles(dev.hw, self.nbytes)
        report = EngineReport("dma", f"HBM → SPM {self!r} → {out!r}", cost - dev.hw.dma.startup_cycles,
                              latency=dev.hw.dma.startup_cycles, nbytes=self.nbytes * self.chips)
        op = dev.record(ctx.kind, f"{call} {self!r} → {out!r}", [report], reads=[self.span()], writes=[out.span()])
        out.ready_at = op.end
        out.source = weakref.ref(self)
        return out


class SpmScalar(DeviceScalar, Generic[D]):
    """A device scalar staged in the SPM of every PE (``s.to_spm(ctx.sub)``; design API.md §8, SPM L2942–2947): a
    guard reads it as a register."""

    __slots__ = ("source",)
    MEMORY = "spm"

    def __init__(self, ctx: Device, dtype: type[dt.Scalar], address: int, chips: int, call: str) -> None:
        self.source: weakref.ReferenceType[HbmScalar[Any]] | None = None
        super().__init__(ctx, dtype, address, chips, call)


def _spm_slot(ctx: Device, chips: int, nbytes: int, address: int | None, call: str) -> int:
    """The byte address of a scalar in each PE's SPM: ``address``, or the lowest free 8-byte slot."""
    cap = ctx.hw.spm.pe_bytes
    if address is not None:
        at = expect_int(address, "address", call=call, lo=0)
        if at % 8 or at + nbytes > cap:
            raise AddressError(f"SPM address {at} is not an 8-byte slot inside the {cap} bytes of a PE's SPM",
                               call=call, fix=f"use a multiple of 8 below {cap}, or leave address=None")
        return at
    taken = sorted((r.lo, r.hi) for r in ctx.memory.registry.live_regions("spm") if r.chips & set(range(chips)))
    at = 0
    for lo, hi in taken:
        if at + nbytes <= lo:
            break
        at = max(at, -(-hi // 8) * 8)
    if at + nbytes > cap:
        raise AllocationError(f"no free 8-byte slot left in the {cap} bytes of a PE's SPM", call=call,
                              fix="free SPM tensors or scalars that are no longer read")
    return at
