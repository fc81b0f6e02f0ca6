"""Hypothesis strategies for random well-formed mapping texts over small axes."""

from __future__ import annotations

import math
from dataclasses import dataclass

from hypothesis import strategies as st

from visa import AxisSet

#: Axis declarations: a name to its size, or a skewed axis ("B'") to its expression over the others
#: ("B - A", manual L986–1003).
Axes = dict[str, int | str]


@dataclass(frozen=True)
class Expr:
    text: str
    size: int
    atomic: bool  # postfix operators may follow without brackets


def _divisors(n: int) -> list[int]:
    return [d for d in range(2, n + 1) if n % d == 0]


def _wrap(e: Expr) -> str:
    return e.text if e.atomic else f"[{e.text}]"


def sizes(axes: Axes) -> dict[str, int]:
    """Every axis name usable in a mapping and its size (a skewed axis has the size of its base)."""
    out = {k: v for k, v in axes.items() if isinstance(v, int)}
    for k, v in axes.items():
        if isinstance(v, str):
            out[k] = out[v.split()[0]]
    return out


def axis_set(axes: Axes) -> AxisSet:
    """The :class:`AxisSet` declaring ``axes`` (skews after the plain axes)."""
    ax = AxisSet(**{k: v for k, v in axes.items() if isinstance(v, int)})
    for k, v in axes.items():
        if isinstance(v, str):
            ax.skew(k, v)
    return ax


@st.composite
def expressions(draw: st.DrawFn, axes: Axes, depth: int = 3) -> Expr:
    """A random mapping expression over ``axes`` with every constructor of the grammar."""
    axes = sizes(axes)
    names = sorted(axes)
    if depth <= 0 or draw(st.integers(0, 3)) == 0:
        if draw(st.integers(0, 5)) == 0:
            return Expr("1", 1, True)
        name = draw(st.sampled_from(names))
        return Expr(name, axes[name], True)
    kind = draw(st.sampled_from(["pair", "pair", "stride", "modulo", "resize", "pad", "lpad", "chain"]))
    if kind == "pair":
        left = draw(expressions(axes, depth - 1))
        right = draw(expressions(axes, depth - 1))
        return Expr(f"{_wrap(left)}, {right.text}" if left.atomic else f"[{left.text}], {right.text}",
                    left.size * right.size, False)
    inner = draw(expressions(axes, depth - 1))
    if kind in ("stride", "modulo"):
        divs = _divisors(inner.size)
        if not divs:
            return inner
        n = draw(st.sampled_from(divs))
        op = "/" if kind == "stride" else "%"
        return Expr(f"{_wrap(inner)} {op} {n}", inner.size // n if op == "/" else n, True)
    if kind == "resize":
        n = draw(st.integers(1, inner.size))
        return Expr(f"{_wrap(inner)} = {n}", n, True)
    if kind == "pad":
        n = draw(st.integers(inner.size, inner.size + 3))
        return Expr(f"{_wrap(inner)} # {n}", n, True)
    if kind == "lpad":
        left = draw(st.integers(1, 3))
        right = draw(st.integers(0, 2))
        text = f"# {left} + {_wrap(inner)}" + (f" + # {right}" if right else "")
        return Expr(text, inner.size + left + right, False)
    # chain: a stride then a modulo of the same operand, B / 32 % 2 style
    divs = _divisors(inner.size)
    if not divs:
        return inner
    n = draw(st.sampled_from(divs))
    rest = inner.size // n
    k = draw(st.sampled_from([d for d in _divisors(rest)] or [1]))
    text = f"{_wrap(inner)} / {n}" + (f" % {k}" if k > 1 else "")
    return Expr(text, k if k > 1 else rest, True)


PLAIN_AXES = st.dictionaries(st.sampled_from(["A", "B", "C", "D"]), st.sampled_from([1, 2, 3, 4, 6]),
                             min_size=1, max_size=3)


@st.composite
def skewed_axes(draw: st.DrawFn) -> Axes:
    """Plain axes, and about half the time a skewed axis ``X' = X ± k·Y`` over two of them (L986–1003)."""
    axes: Axes = dict(draw(PLAIN_AXES))
    names = sorted(axes)
    if len(names) >= 2 and draw(st.booleans()):
        base, other = draw(st.permutations(names))[:2]
        sign = draw(st.sampled_from(["-", "+"]))
        coef = draw(st.sampled_from(["", "", "2*"]))
        axes[f"{base}'"] = f"{base} {sign} {coef}{other}"
    return axes


AXES = skewed_axes()


@st.composite
def axes_and_expr(draw: st.DrawFn, depth: int = 3, max_size: int = 600) -> tuple[Axes, Expr]:
    axes = draw(AXES)
    e = draw(expressions(axes, depth))
    if e.size > max_size:
        e = Expr(f"{_wrap(e)} = {max_size}" if e.atomic else f"[{e.text}] = {max_size}", max_size, True)
    return axes, e


def factor_pieces(name: str, size: int, factors: list[int]) -> list[tuple[str, int]]:
    """Digits of an axis split into ``factors`` (outermost first) as ``A / s % f`` texts."""
    out = []
    inner = math.prod(factors)
    assert inner == size
    for f in factors:
        inner //= f
        text = name
        if inner > 1:
            text += f" / {inner}"
        if f * inner < size:
            text += f" % {f}"
        out.append((text, f))
    return out


@st.composite
def factorizations(draw: st.DrawFn, size: int) -> list[int]:
    """A random ordered factorization of ``size`` into factors > 1 (``[]`` for size 1)."""
    out: list[int] = []
    rest = size
    while rest > 1:
        divs = _divisors(rest)
        f = draw(st.sampled_from(divs))
        out.append(f)
        rest //= f
    return out
