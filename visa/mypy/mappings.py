"""Mapping types for the plugin: the text a type carries, and ``m["..."]`` resolved the way the runtime does.

A mapping's static type is ``visa.mapping.static.m[Literal["<canonical text> (<axis sizes>)"]]``: the
canonical text is ``str(mapping)`` (equivalent spellings give the same text, manual L1017–1028), the sizes
are those of the axes it uses (``A=2048``; a skewed axis as ``B'=B - A``), so that the type alone rebuilds
the :class:`~visa.mapping.Mapping` (:func:`decode`) wherever it flows, whatever module it reaches.

:func:`resolve` parses ``m["..."]`` text written in a module exactly as ``m["..."]`` does at run time
(:func:`visa.mapping.core.module_mapping`), given what the module's source declares: its ``axes(...)`` and
``skew(...)`` calls and its module-level mapping aliases (for escapes ``{Name}``).  Nothing here imports
mypy's checker; :class:`ModuleFacts` reads a parsed module (``mypy.nodes``) only.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Iterator
from collections.abc import Mapping as AbcMapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from mypy.constant_fold import constant_fold_expr
from mypy.nodes import (
    AssignmentStmt,
    CallExpr,
    Expression,
    ExpressionStmt,
    FuncDef,
    IndexExpr,
    MemberExpr,
    MypyFile,
    NameExpr,
    RefExpr,
    StrExpr,
    TupleExpr,
)

from visa.errors import VisaError
from visa.mapping import AxisSet, Mapping
from visa.mapping.axes import AXES_ATTR
from visa.mapping.core import _declare_from, module_mapping
from visa.mypy.chain import walk

__all__ = ["encode", "decode", "ModuleFacts", "resolve", "Unresolved", "is_m", "is_mapping_expr", "M_NAMES",
           "LITERAL_M_NAMES", "fix_annotations", "needs_parse_fix"]

#: Full names under which the runtime ``m`` can be referenced.
M_NAMES = frozenset({"visa.mapping.core.m", "visa.mapping.m", "visa.m"})
#: Full names of ``M``, whose ``M[Literal["A % 8"]]`` is ``m["A % 8"]`` spelt so that pyright accepts it.
LITERAL_M_NAMES = frozenset({"visa.mapping.core.M", "visa.mapping.M", "visa.M"})
AXES_NAMES = frozenset({"visa.mapping.axes.axes", "visa.mapping.axes", "visa.axes"})
SKEW_NAMES = frozenset({"visa.mapping.axes.skew", "visa.mapping.skew", "visa.skew"})

_SIZES = re.compile(r"(?P<text>.*) \((?P<sizes>[A-Za-z_][A-Za-z0-9_]*'*=[^()]*)\)\Z", re.S)


class Unresolved(Exception):
    """The mapping depends on something the plugin cannot see statically (a local variable, a call)."""


def _skew_text(base: str, coefs: tuple[tuple[str, int], ...]) -> str:
    out = base
    for name, c in coefs:
        sign = "+" if c > 0 else "-"
        out += f" {sign} {name}" if abs(c) == 1 else f" {sign} {abs(c)}*{name}"
    return out


def encode(mapping: Mapping) -> str:
    """The text a mapping type carries: ``'A / 8 # 256 (A=2048)'`` (``'1 # 2'`` when no axis is used)."""
    axis_set = AxisSet()
    _declare_from(mapping.canon, axis_set)
    parts = [f"{k}={v}" for k, v in sorted(axis_set.sizes.items())]
    for name in sorted(n for n in _names(str(mapping)) if axis_set.skew_of(n) is not None):
        sk = axis_set.skew_of(name)
        assert sk is not None
        parts.append(f"{name}={_skew_text(sk.base, sk.coefs)}")
    text = str(mapping)
    return f"{text} ({', '.join(parts)})" if parts else text


def _names(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*'*", text))


@lru_cache(maxsize=4096)
def decode(text: str) -> Mapping:
    """The mapping a type's text describes (raises :class:`VisaError` if the text is not one)."""
    found = _SIZES.match(text)
    axis_set = AxisSet()
    body = text
    if found:
        body = found.group("text")
        skews = []
        for part in found.group("sizes").split(", "):
            name, _, value = part.partition("=")
            if value.isdigit():
                axis_set.declare(**{name: int(value)})
            else:
                skews.append((name, value))
        for name, expr in skews:
            axis_set.skew(name, expr)
    return Mapping.parse(body, axis_set)


def is_m(expr: Expression) -> bool:
    """Is ``expr`` a reference to visa's ``m``?"""
    if isinstance(expr, RefExpr) and expr.fullname:
        return expr.fullname in M_NAMES
    return isinstance(expr, NameExpr) and expr.name == "m"


def is_mapping_expr(expr: Expression) -> bool:
    """Is ``expr`` ``m["..."]`` or a name (possibly another alias)?"""
    return (isinstance(expr, IndexExpr) and is_m(expr.base) and isinstance(expr.index, StrExpr)) or \
        isinstance(expr, NameExpr)


def _callee_is(expr: Expression, names: frozenset[str], short: str) -> bool:
    if isinstance(expr, RefExpr) and expr.fullname:
        return expr.fullname in names
    if isinstance(expr, NameExpr):
        return expr.name == short
    return isinstance(expr, MemberExpr) and expr.name == short


@dataclass
class ModuleFacts:
    """What a module's top level declares for mappings: axes, skews and mapping aliases (by source)."""

    name: str
    axis_set: AxisSet | None = None
    aliases: dict[str, Expression] = field(default_factory=dict)
    #: declaration errors of ``axes(...)``/``skew(...)`` calls, by the call's (line, column)
    errors: dict[tuple[int, int], VisaError] = field(default_factory=dict)

    @classmethod
    def scan(cls, tree: MypyFile) -> ModuleFacts:
        """Read the module's top-level statements (in order, as the runtime executes them)."""
        facts = cls(tree.fullname)
        for stmt in tree.defs:
            if isinstance(stmt, ExpressionStmt) and isinstance(stmt.expr, CallExpr):
                facts._declare(stmt.expr, tree.fullname)
            elif isinstance(stmt, AssignmentStmt):
                if isinstance(stmt.rvalue, CallExpr):
                    facts._declare(stmt.rvalue, tree.fullname)
                for lv in stmt.lvalues:
                    facts._alias(lv, stmt.rvalue)
        return facts

    def _declare(self, call: CallExpr, module: str) -> None:
        is_axes = _callee_is(call.callee, AXES_NAMES, "axes")
        is_skew = _callee_is(call.callee, SKEW_NAMES, "skew")
        if not (is_axes or is_skew):
            return
        if self.axis_set is None:
            self.axis_set = AxisSet(module)
        try:
            if is_axes:
                sizes: dict[str, Any] = {}
                for name, arg in zip(call.arg_names, call.args, strict=True):
                    if name is None:
                        continue
                    value = constant_fold_expr(arg, module)
                    if value is None:
                        return  # not a constant: sizes unknown, leave the rest to run time
                    sizes[name] = value
                self.axis_set.declare(**sizes)
            else:
                texts = [constant_fold_expr(a, module) for a in call.args]
                if len(texts) == 2 and all(isinstance(t, str) for t in texts):
                    self.axis_set.skew(str(texts[0]), str(texts[1]))
        except VisaError as err:
            self.errors[(call.line, call.column)] = err

    def _alias(self, lvalue: Expression, rvalue: Expression) -> None:
        if isinstance(lvalue, NameExpr):
            self.aliases[lvalue.name] = rvalue
        elif (isinstance(lvalue, TupleExpr) and isinstance(rvalue, TupleExpr)
              and len(lvalue.items) == len(rvalue.items)):
            for lv, rv in zip(lvalue.items, rvalue.items, strict=True):
                self._alias(lv, rv)


#: ``lookup(name)`` gives the mapping an imported or already-typed name holds, ``None`` if it holds none,
#: or raises :class:`Unresolved`.
Lookup = Callable[[str], Mapping | None]


class _Scope(AbcMapping[str, Any]):
    """The module's globals as ``m["..."]`` sees them at run time, built lazily from its source."""

    def __init__(self, facts: ModuleFacts, lookup: Lookup, active: frozenset[str]) -> None:
        self.facts = facts
        self.lookup = lookup
        self.active = active

    def __getitem__(self, name: str) -> Any:
        if name == "__name__":
            return self.facts.name
        if name == AXES_ATTR:
            if self.facts.axis_set is None:
                raise KeyError(name)
            return self.facts.axis_set
        rvalue = self.facts.aliases.get(name)
        if rvalue is not None and name not in self.active:
            got = _value(rvalue, self.facts, self.lookup, self.active | {name})
        else:
            got = self.lookup(name)
        if got is None:
            raise KeyError(name)
        return got

    def __iter__(self) -> Iterator[str]:
        return iter(["__name__", AXES_ATTR, *self.facts.aliases])

    def __len__(self) -> int:
        return 2 + len(self.facts.aliases)


def _value(expr: Expression, facts: ModuleFacts, lookup: Lookup, active: frozenset[str]) -> Mapping | None:
    """The mapping an alias's right-hand side evaluates to (``m["..."]`` or another alias), else None."""
    if isinstance(expr, IndexExpr) and is_m(expr.base) and isinstance(expr.index, StrExpr):
        return module_mapping(expr.index.value, _Scope(facts, lookup, active))
    if isinstance(expr, NameExpr):
        rvalue = facts.aliases.get(expr.name)
        if rvalue is not None and expr.name not in active:
            return _value(rvalue, facts, lookup, active | {expr.name})
        return lookup(expr.name)
    return None


def resolve(text: str, facts: ModuleFacts, lookup: Lookup) -> Mapping:
    """``m[text]`` written in the module ``facts`` describes (raises the runtime's :class:`VisaError`)."""
    return module_mapping(text, _Scope(facts, lookup, frozenset()))


# -- parse fix-up ------------------------------------------------------------------------------------------------
def _m_name(name: str) -> bool:
    return name == "m" or name.endswith(".m")


def _fix_type(typ: object) -> None:
    """Inside ``m[...]``, turn a text that happened to parse as a type name (``m["A"]``) back into raw text."""
    from mypy.types import CallableType, RawExpressionType, TupleType, TypeList, UnboundType, UnionType

    if isinstance(typ, UnboundType):
        if _m_name(typ.name) and len(typ.args) == 1:
            arg = typ.args[0]
            if isinstance(arg, UnboundType) and arg.original_str_expr is not None:
                typ.args = (RawExpressionType(arg.original_str_expr, "builtins.str", arg.line, arg.column),)
                return
        for a in typ.args:
            _fix_type(a)
    elif isinstance(typ, CallableType):
        for a in typ.arg_types:
            _fix_type(a)
        _fix_type(typ.ret_type)
    elif isinstance(typ, (UnionType, TupleType, TypeList)):
        for a in typ.items:
            _fix_type(a)


def fix_annotations(tree: MypyFile) -> None:
    """Keep ``m["A"]`` in an annotation the raw text ``A`` (as ``m["A % 8"]`` is), before semantic analysis.

    mypy parses a string type argument that looks like a type (``"A"``) as a forward reference and would look
    the name ``A`` up (an axis, not a Python name) before any plugin hook sees it.  Run from
    ``get_additional_deps``, right after parsing; idempotent.
    """
    for node in walk(tree):
        if isinstance(node, FuncDef):
            _fix_type(node.type)
            _fix_type(node.unanalyzed_type)
            for arg in node.arguments:
                _fix_type(arg.type_annotation)
        elif isinstance(node, AssignmentStmt):
            _fix_type(node.type)
            _fix_type(node.unanalyzed_type)


def needs_parse_fix(path: str) -> bool:
    """Whether the module at ``path`` has an annotation that :func:`fix_annotations` must rewrite: ``m["A"]`` (or
    ``x.m["A"]``) whose text is a (dotted) name, inside a function's argument or return annotation or a variable
    annotation.  Read from the source with :mod:`ast` (mypy's tree is not available when it checks a cache entry);
    an unreadable file needs nothing."""
    try:
        stat = os.stat(path)
    except OSError:
        return False
    key = (path, stat.st_mtime_ns, stat.st_size)
    got = _PARSE_FIX.get(key)
    if got is None:
        got = _scan_parse_fix(path)
        _PARSE_FIX[key] = got
    return got


_PARSE_FIX: dict[tuple[str, int, int], bool] = {}
_NAME_TEXT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def _scan_parse_fix(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            source = fh.read()
        if b"m[" not in source:
            return False
        tree = ast.parse(source)
    except (OSError, SyntaxError, ValueError):
        return False
    notes: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            notes += [x.annotation for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg)
                      if x is not None and x.annotation is not None]
            if node.returns is not None:
                notes.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            notes.append(node.annotation)
    for note in notes:
        for sub in ast.walk(note):
            if (isinstance(sub, ast.Subscript) and _m_node(sub.value) and isinstance(sub.slice, ast.Constant)
                    and isinstance(sub.slice.value, str) and _NAME_TEXT.fullmatch(sub.slice.value.strip())):
                return True
    return False


def _m_node(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id == "m") or (isinstance(node, ast.Attribute) and node.attr == "m")
