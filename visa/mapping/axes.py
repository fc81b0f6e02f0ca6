"""Axis declarations: the Python spelling of the manual's ``axes![A = 8, B = 512]`` (manual L587–595).

``axes(A=8, B=512)`` declares names and sizes for the module that calls it, as ``axes!`` does for a Rust
module.  Mapping text written in that module (``m["A, B"]``) resolves names against it.  Code that needs
several axis sets in one module (tests, mostly) builds an :class:`AxisSet` explicitly and writes
``ax.m["A, B"]``.

>>> ax = AxisSet(A=8, B=512)
>>> ax.size("B")
512
>>> ax.declare(A=8).size("A")          # repeating a declaration with the same size is fine
8
>>> ax.declare(A=4)
Traceback (most recent call last):
visa.errors.AxisDeclarationError: axes: axis A is already declared with size 8, not 4; fix: ...
"""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Mapping as AbcMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from visa.errors import AxisDeclarationError, MappingSyntaxError, UnknownAxisError

if TYPE_CHECKING:
    from visa.mapping.core import MappingFactory

__all__ = ["AxisSet", "Skew", "axes", "skew", "module_axes", "AXES_ATTR"]

#: Name of the module attribute where ``axes(...)`` keeps the module's :class:`AxisSet`.
AXES_ATTR = "__visa_axes__"

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*'*\Z", re.ASCII)


@dataclass(frozen=True, slots=True)
class Skew:
    """A derived (skewed) axis ``name = base + Σ coef·other`` (manual "Skewed Axis", L986–1003).

    ``B' = B - A`` is ``Skew("B'", "B", (("A", -1),), size_of_B)``.  A buffer coordinate ``b'`` along the
    derived axis stands for ``B = (b' - Σ coef·other) mod |B|``, which is the manual's table
    ``B = (B' + A) % 4``.
    """

    name: str
    base: str
    coefs: tuple[tuple[str, int], ...]
    size: int


class AxisSet:
    """A set of named axes with sizes (manual L587–595), plus derived skewed axes (L986–1003).

    Sizes are positive integers; a name is declared once (again with the same size is accepted).
    """

    __slots__ = ("_sizes", "_skews", "name", "__weakref__")

    def __init__(self, _name: str = "", /, **sizes: int) -> None:
        self.name = _name
        self._sizes: dict[str, int] = {}
        self._skews: dict[str, Skew] = {}
        self.declare(**sizes)

    # -- declaration -------------------------------------------------------------------------------------
    def declare(self, **sizes: int) -> AxisSet:
        """Declare more axes; returns ``self``.  Non-positive sizes and conflicting redeclarations raise."""
        for name, size in sizes.items():
            self._declare_one(name, size)
        return self

    def _declare_one(self, name: str, size: object) -> None:
        from visa.mapping.syntax import MAX_SIZE

        if not _NAME.match(name):
            raise AxisDeclarationError(f"{name!r} is not an axis name", call="axes",
                                       fix="use an identifier such as A or Batch")
        if isinstance(size, bool) or not isinstance(size, int):
            raise AxisDeclarationError(f"axis {name} needs an integer size, got {size!r}", call="axes",
                                       axis=name, fix=f"write axes({name}=8)")
        if size <= 0:
            raise AxisDeclarationError(f"axis {name} must have a positive size, got {size}", call="axes",
                                       axis=name, fix="sizes count elements and start at 1")
        if size > MAX_SIZE:
            raise AxisDeclarationError(f"axis {name} has size {size}, more than the limit {MAX_SIZE} (2**48)",
                                       call="axes", axis=name, fix="no memory holds more elements")
        old = self._sizes.get(name, self._skews[name].size if name in self._skews else None)
        if old is not None and (old != size or name in self._skews):
            raise AxisDeclarationError(f"axis {name} is already declared with size {old}, not {size}",
                                       call="axes", axis=name,
                                       fix="declare each axis once per module, or use a separate AxisSet")
        self._sizes[name] = size

    def skew(self, name: str, expr: str) -> AxisSet:
        """Declare a derived axis, e.g. ``skew("B'", "B - A")`` (manual L986–1003); returns ``self``.

        The expression is ``base ± [k*]other ± ...``; the derived axis has the size of ``base``.
        """
        from visa.mapping.syntax import MAX_SIZE
        from visa.validate import expect_str

        expect_str(name, "name", call="skew")
        expect_str(expr, "expr", call="skew")
        if not _NAME.match(name):
            raise AxisDeclarationError(f"{name!r} is not an axis name", call="skew",
                                       fix="primed names such as B' are allowed")
        if name in self._sizes or name in self._skews:
            raise AxisDeclarationError(f"axis {name} is already declared", call="skew", axis=name,
                                       fix="pick a new name for the derived axis")
        tokens = re.findall(r"[+-]|[0-9]+\s*\*\s*[A-Za-z_][A-Za-z0-9_]*'*|[A-Za-z_][A-Za-z0-9_]*'*|\S", expr,
                            re.ASCII)
        sign, terms = 1, []
        for tok in tokens:
            if tok in "+-":
                sign = 1 if tok == "+" else -1
                continue
            coef, _, axis = tok.rpartition("*")
            axis = axis.strip()
            if not _NAME.match(axis):
                raise MappingSyntaxError(f"cannot read {tok!r} in the skew {name} = {expr}", call="skew",
                                         fix="write e.g. skew(\"B'\", \"B - A\")")
            if len(coef.strip()) > 15 or (coef.strip() and int(coef) > MAX_SIZE):
                raise MappingSyntaxError(f"the coefficient in {tok!r} is larger than {MAX_SIZE}", call="skew",
                                         fix="a coefficient is taken modulo the base axis's size anyway")
            terms.append((axis, sign * (int(coef) if coef.strip() else 1)))
            sign = 1
        if not terms or terms[0][1] != 1:
            raise MappingSyntaxError(f"the skew {name} = {expr} must start with its base axis",
                                     call="skew", fix="write e.g. skew(\"B'\", \"B - A\")")
        base = terms[0][0]
        try:
            sizes = [self.size(axis) for axis, _ in terms]  # each must exist
        except UnknownAxisError as e:
            raise UnknownAxisError(e.message, call="skew", axis=e.axis, fix=e.fix) from None
        reach = sum(abs(c) * n for (_, c), n in zip(terms[1:], sizes[1:], strict=True))
        if reach > 1 << 60:  # Σ|coef|·size(other) bounds the shift; keep it exact in int64
            raise AxisDeclarationError(f"the skew {name} = {expr} shifts by up to {reach}, more than 2**60",
                                       call="skew", axis=name, fix="use smaller coefficients (they act modulo the "
                                       "base axis's size anyway)")
        self._skews[name] = Skew(name, base, tuple(terms[1:]), sizes[0])
        return self

    # -- lookup ------------------------------------------------------------------------------------------
    def size(self, name: str) -> int:
        """Size of a declared axis (a derived axis has the size of its base)."""
        if name in self._sizes:
            return self._sizes[name]
        if name in self._skews:
            return self._skews[name].size
        known = ", ".join(f"{k}={v}" for k, v in self._sizes.items()) or "none"
        where = f" in {self.name}" if self.name else ""
        raise UnknownAxisError(f"axis {name} is not declared{where} (declared: {known})", axis=name,
                               fix=f"add it to the module's axes(...) call, e.g. axes({_py(name)}=...)")

    def skew_of(self, name: str) -> Skew | None:
        """The derivation of ``name`` if it is a skewed axis, else ``None``."""
        return self._skews.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._sizes or name in self._skews

    @property
    def sizes(self) -> AbcMapping[str, int]:
        """Read-only view of the declared (non-derived) axes."""
        return types.MappingProxyType(self._sizes)

    @property
    def m(self) -> MappingFactory:
        """``ax.m["A, B"]``: parse mapping text against this axis set."""
        factory = _FACTORY[0] if _FACTORY else _factory()
        return factory(self)

    def __repr__(self) -> str:
        parts = [f"{k}={v}" for k, v in self._sizes.items()]
        parts += [f"{s.name}=skew({s.base})" for s in self._skews.values()]
        return f"AxisSet({', '.join(parts)})"


#: :class:`~visa.mapping.core.MappingFactory`, once imported (that module imports this one: imported at the first
#: :attr:`AxisSet.m`, not again at every one).
_FACTORY: list[type[MappingFactory]] = []


def _factory() -> type[MappingFactory]:
    from visa.mapping.core import MappingFactory

    _FACTORY.append(MappingFactory)
    return MappingFactory


def _py(name: str) -> str:
    return name.replace("'", "_")


def _caller_globals(depth: int) -> dict[str, Any]:
    frame = sys._getframe(depth + 1)
    return frame.f_globals


def module_axes(module_globals: dict[str, Any], *, create: bool = False) -> AxisSet | None:
    """The :class:`AxisSet` that ``axes(...)`` attached to a module (its globals dict; manual L587–595)."""
    found = module_globals.get(AXES_ATTR)
    if isinstance(found, AxisSet):
        return found
    if create:
        created = AxisSet(str(module_globals.get("__name__", "")))
        module_globals[AXES_ATTR] = created
        return created
    return None


def axes(**sizes: int) -> AxisSet:
    """Declare axis names and sizes for the calling module: ``axes(A=2048, B=512)`` (manual L587–595).

    Returns the module's :class:`AxisSet`.  Calling it again adds axes; a name redeclared with another size
    is an :class:`~visa.errors.AxisDeclarationError` — except in an interactive session (a notebook or the REPL,
    in ``__main__``), where re-running a cell with new sizes gives the session a new axis set: the axes named
    get their new sizes, the others are kept, skews are dropped (run ``skew`` again), and mappings made
    before keep the sizes they were made with.
    """
    module_globals = _caller_globals(1)
    found = module_axes(module_globals, create=True)
    assert found is not None
    if _interactive(module_globals) and any(n in found and found.size(n) != v for n, v in sizes.items()):
        kept = {n: v for n, v in found.sizes.items() if n not in sizes}
        fresh = AxisSet(found.name, **kept)
        module_globals[AXES_ATTR] = fresh
        return fresh.declare(**sizes)
    return found.declare(**sizes)


def _interactive(module_globals: dict[str, Any]) -> bool:
    """Whether a module is an interactive session's namespace: ``__main__`` under IPython/Jupyter or the REPL."""
    import builtins

    return module_globals.get("__name__") == "__main__" and (hasattr(builtins, "get_ipython")
                                                              or hasattr(sys, "ps1"))


def skew(name: str, expr: str) -> AxisSet:
    """Declare a skewed axis for the calling module: ``skew("B'", "B - A")`` (manual L986–1003)."""
    found = module_axes(_caller_globals(1), create=True)
    assert found is not None
    return found.skew(name, expr)
