"""Snippets for the Fetch Engine and its adapter (``visa/engines/fetch.py``, ``visa/stream/fetch.py``; manual
"Fetch Engine" and "Fetch Adapter", L1700–2121): the pad value, the lookup table, the cast, the zero points
and the fetch size, each one fetch of a DM tensor."""

from __future__ import annotations

from visa.snippets.base import Snippet, module, stream

__all__ = ["ENGINES_FETCH"]

_I8 = {"dtype": "i8"}   # i8 in DM, widened to i32 by the fetch
_PAD = {"imports": "from visa import PadValue\n"}


def _fetch(extra: str, failing: str, fixed: str, imports: str = "") -> dict[str, dict[str, str]]:
    return {"failing": _I8 | {"imports": imports, "fetch": f'.fetch{failing}(i32, m["1"], m["A % 8"]{extra})'},
            "fixed": _I8 | {"imports": imports, "fetch": f'.fetch{fixed}(i32, m["1"], m["A % 8"]{extra})'}}


def _pad(failing: str, fixed: str) -> Snippet:
    return stream(_PAD | {"fetch": f'.fetch(i32, m["1"], m["A % 8"], pad_value={failing})'},
                  _PAD | {"fetch": f'.fetch(i32, m["1"], m["A % 8"], pad_value={fixed})'})


_TABLE = ("import numpy as np\n\nfrom visa import Context, DmTensor, LookupTable, axes, i4, i8, i32, m\n\n"
          "axes(A=2048)\nctx = Context.acquire()\n"
          'd = DmTensor(ctx, i8, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)')
_DOUBLE = "double = LookupTable.from_function({}, i8, lambda x: np.clip(2 * x, -128, 127))   # table[x] = 2x (L1946)"
_WITH_TABLE = '{}.begin(d.view()).fetch_with_table(i32, m["1"], m["A % 8"], {})'

_ZP = ("from visa import Context, DmTensor, axes, {dtypes}, m\n\naxes(A={a})\nctx = Context.acquire()\n"
       'd = DmTensor(ctx, {src}, m["1"], m["1 # 2"], m["A / {n}"], m["A % {n}"], 0)')
_ZP_FETCH = 'ctx.main.begin(d.view()).{method}({dst}, m["1"], m["A % {n}"], {zp})'


def _zp(failing: str, fixed: str, src: str = "i8", dst: str = "i32", n: int = 8, a: int = 2048,
        method: str = "fetch_with_zero_point", fixed_method: str = "") -> Snippet:
    """A fetch of ``src`` into ``dst`` with a zero point (L2022–2049): ``failing`` and ``fixed`` are the zero
    point arguments."""
    head = _ZP.format(dtypes=", ".join(sorted({src, dst})), a=a, src=src, n=n)
    return module(head, _ZP_FETCH.format(method=method, dst=dst, n=n, zp=failing),
                  _ZP_FETCH.format(method=fixed_method or method, dst=dst, n=n, zp=fixed))


_RUNS = ("from visa import Context, DmTensor, axes, {dtype}, m\n\naxes(A={a}, T=2)\nctx = Context.acquire()\n"
         'd = DmTensor(ctx, {dtype}, m["1"], m["1 # 2"], m["A / {n}"], m["{element}"], 0)')
_RUNS_FETCH = 'ctx.{tu}.begin(d.view()).fetch({dtype}, m["T"], m["A % {n}"])'


def _runs(tu: str, dtype: str, n: int) -> Snippet:
    """A fetch whose packet axis A is strided in DM (T innermost): each fetch reads one element's bytes."""
    def head(element: str) -> str:
        return _RUNS.format(dtype=dtype, n=n, element=element, a=256 * n)
    body = _RUNS_FETCH.format(tu=tu, dtype=dtype, n=n)
    return Snippet(f"\n{head(f'A % {n}, T')}   # T innermost: A steps by 2 elements\n\n{body}\n",
                   f"\n{head(f'T, A % {n}')}   # A innermost: the packet is contiguous\n\n{body}\n")


_CAST = ("from visa import Context, DmTensor, axes, {src}, {dst}, m\n\naxes(A={a})\nctx = Context.acquire()\n"
         'd = DmTensor(ctx, {src}, m["1"], m["1 # 2"], m["A / {n}"], m["A % {n}"], 0)')
_CAST_FETCH = 'ctx.main.begin(d.view()).fetch({dst}, m["1"], m["A % {n}"])'


def _cast(src: str, dst: str, fixed_dst: str, n: int, a: int) -> Snippet:
    return Snippet(f"\n{_CAST.format(src=src, dst=dst, n=n, a=a)}\n\n{_CAST_FETCH.format(dst=dst, n=n)}\n",
                   f"\n{_CAST.format(src=src, dst=fixed_dst, n=n, a=a)}\n\n{_CAST_FETCH.format(dst=fixed_dst, n=n)}\n")


_PAIR = ("from visa import Context, DmTensor, axes, i32, m\n\naxes(A=2048, I=2)\nctx = Context.acquire()\n"
         'd = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["{0}"], 0)\n'
         'e = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["{0}"], 8192)')
_PAIR_FETCH = 'ctx.main.begin_interleaved(m["I"], d.view(), e.view()).fetch(i32, m["I"], m["A % 8"])'

_GROUPS = ("from visa import Context, DmTensor, axes, i32, m\n\naxes(G=4, R=32, D=8)\nctx = Context.acquire()\n"
           't = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["G # 256"], m["R, D"], 0)   # a table of 32 rows')
_HETERO = ("views = [{t}.view().tile(m[\"R\"], 8, m[\"R = 8, D\"], 8 * g) for g in range({n})]   # rows 8g..8g+7\n"
           'ctx.main.begin_heterogeneous(m["G"], views).fetch(i32, m["R = 8"], m["D"])')
_LIFT = ("from visa import Context, DmTensor, axes, bf16, m\n\naxes(A=128, X=2, H=2, V=16)\nctx = Context.acquire()\n"
         'dm = DmTensor(ctx, bf16, m["1"], m["1 # 2"], m["A, X"], m["H, V"], 0)   # every row on both X slices')
_LIFTED = ('(ctx.main.begin(dm.view()).fetch(bf16, m["H"], m["V"])\n .fetch_slice_lift(m["A, H"], m["1"]){}'
           '\n .collect(m["1"], m["V"]))')

#: site key → the failing and the fixed program.
ENGINES_FETCH: dict[str, Snippet] = {
    "fetch.plan_pad_value DtypeError: pad_value takes a padvalue": _pad("0", "PadValue.Zero"),
    "fetch.plan_pad_value HardwareLimitError: the sub context's fetch": stream(
        _PAD | {"begin": "ctx.sub.begin(d.view())", "fetch": '.fetch(i32, m["1"], m["A % 8"], pad_value=PadValue.Min)'},
        _PAD | {"fetch": '.fetch(i32, m["1"], m["A % 8"], pad_value=PadValue.Min)'}),
    "fetch.plan_pad_value DtypeError: padvalue custom is not": _pad("PadValue.Custom(0.5)", "PadValue.Custom(1)"),
    "fetch.PadValue.identity DtypeError: has no identity padding": stream(
        _PAD | {"imports": "from visa import IntraSliceReduceOpI32, LogicBinaryOpI32, PadValue\n",
                "fetch": '.fetch(i32, m["1"], m["A % 8"], pad_value=PadValue.identity(LogicBinaryOpI32.BitAnd))'},
        _PAD | {"imports": "from visa import IntraSliceReduceOpI32, LogicBinaryOpI32, PadValue\n",
                "fetch": '.fetch(i32, m["1"], m["A % 8"], pad_value=PadValue.identity(IntraSliceReduceOpI32.Max))'}),
    "fetch.LookupTable.__init__ UnsupportedFeatureError: a lookup table indexed": module(
        "import numpy as np\n\nfrom visa import LookupTable, i8, i32",
        "table = LookupTable(i32, i8, np.zeros(256, np.int8))   # one entry per i32 bit pattern?",
        "table = LookupTable(i8, i8, np.zeros(256, np.int8))   # one entry per i8 bit pattern"),
    "fetch.LookupTable.__init__ DtypeError: a lookuptable has entries": module(
        "import numpy as np\n\nfrom visa import LookupTable, i8",
        "table = LookupTable(i8, i8, np.arange(128))   # entries for 0..127 only",
        "table = LookupTable(i8, i8, np.arange(-128, 128))"),
    "fetch._plan HardwareLimitError: table indexing is a": module(
        _TABLE, f"{_DOUBLE.format('i8')}\n{_WITH_TABLE.format('ctx.sub', 'double')}",
        f"{_DOUBLE.format('i8')}\n{_WITH_TABLE.format('ctx.main', 'double')}"),
    "fetch._plan DtypeError: the lookup table is": module(
        _TABLE, f"{_DOUBLE.format('i4')}\n{_WITH_TABLE.format('ctx.main', 'double')}",
        f"{_DOUBLE.format('i8')}\n{_WITH_TABLE.format('ctx.main', 'double')}"),
    "fetch.fetch VisaError: fetch_with_table takes a lookuptable": module(
        _TABLE, f"double = np.clip(2 * np.arange(-128, 128), -128, 127)\n{_WITH_TABLE.format('ctx.main', 'double')}",
        f"{_DOUBLE.format('i8')}\n{_WITH_TABLE.format('ctx.main', 'double')}"),
    "fetch._plan UnsupportedOnProfileError": _cast("i4", "i9", "i5", 64, 16384),
    "fetch._plan LayoutError: the interleave axis is": Snippet(   # I names both the pair and a digit of each
        f"\n{_PAIR.format('I, A % 8')}\n\n{_PAIR_FETCH}\n", f"\n{_PAIR.format('A % 8')}\n\n{_PAIR_FETCH}\n"),
    "fetch._check_zero_points LayoutError: zero points for tensor": _zp(
        "(1, 2)", "1", method="fetch_with_zero_points", fixed_method="fetch_with_zero_point"),
    "fetch._check_zero_points UnsupportedFeatureError: zero-point subtraction turns quantized": Snippet(
        _zp("1", "1", src="bf16", dst="f32").failing, _zp("1", "1", src="i8", dst="i32").fixed),
    "fetch._check_zero_points DtypeError: zero point is not": _zp("300", "30"),
    "fetch._check_zero_points DtypeError: zero point does not": _zp("20", "10", src="i4", dst="i5", n=64, a=16384),
    "fetch._plan HardwareLimitError: no fetch size of": _runs("main", "i4", 16),
    "fetch._plan HardwareLimitError: the sub context fetches": _runs("sub", "i32", 8),
    "fetch._subtract DtypeError: zero-point subtraction gives outside": module(
        _ZP.format(dtypes="i8, i32", a=2048, src="i8", n=8) + "\nd.view().memset(-128, ctx.sub)   # every byte -128",
        _ZP_FETCH.format(method="fetch_with_zero_point", dst="i8", n=8, zp="1") + "   # -128 - 1 in i8",
        _ZP_FETCH.format(method="fetch_with_zero_point", dst="i32", n=8, zp="1")),
    "fetch.begin_heterogeneous LayoutError: the slice groups are": module(
        _GROUPS, _HETERO.format(t="t", n=3), _HETERO.format(t="t", n=4)),
    "fetch.begin_heterogeneous LayoutError: views is a heterogeneous": module(
        _GROUPS + '\nu = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["1 # 256"], m["R, D"], 1 << 12)   # one slice',
        _HETERO.format(t="(t if g else u)", n=4), _HETERO.format(t="t", n=4)),
    "fetch.lift TypestateError: the stream's was already": module(
        _LIFT, _LIFTED.format('\n .fetch_slice_lift(m["A, H"], m["1"])'), _LIFTED.format("")),
}
