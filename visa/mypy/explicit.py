"""Explicit axis sets (``ax = AxisSet(A=8); ax.m["A"]``): the :class:`~visa.mapping.AxisSet` a name holds, when the
source builds it with constant sizes and never declares more axes on it."""

from __future__ import annotations

from typing import Any

from mypy.constant_fold import constant_fold_expr
from mypy.nodes import AssignmentStmt, CallExpr, Expression, ExpressionStmt, MemberExpr, NameExpr, RefExpr

from visa.errors import VisaError
from visa.mapping import AxisSet
from visa.mypy.chain import source_of, walk

__all__ = ["axis_set_of"]

AXIS_SET = frozenset({"visa.mapping.axes.AxisSet", "visa.mapping.AxisSet", "visa.AxisSet"})


def _grows(expr: Expression | None, name: str) -> bool:
    """``name.declare(...)`` / ``name.skew(...)`` (an axis set that grows: its sizes are not constant)."""
    return isinstance(expr, CallExpr) and isinstance(expr.callee, MemberExpr) and \
        expr.callee.name in ("declare", "skew") and isinstance(expr.callee.expr, NameExpr) and \
        expr.callee.expr.name == name


def _mutated(name: str, scope: Any) -> bool:
    """Does a statement of ``scope`` (a function or module, nested blocks included) grow the axis set ``name``?"""
    return any((isinstance(node, ExpressionStmt) and _grows(node.expr, name))
               or (isinstance(node, AssignmentStmt) and _grows(node.rvalue, name)) for node in walk(scope))


def axis_set_of(expr: Expression, call: Any) -> AxisSet | None:
    """The axis set ``expr`` holds (an ``AxisSet(...)`` call, or a name assigned one once), else None."""
    fn = call.function()
    if isinstance(expr, NameExpr):
        name = expr.name
        if fn is not None and call._is_local(name):
            src = source_of(expr, fn)
            scope: Any = fn
        else:
            facts = call.plugin.facts(call.module)
            src = facts.aliases.get(name) if facts is not None else None
            scope = call.plugin.tree(call.module)
        if src is None or scope is None or _mutated(name, scope):
            return None
        expr = src
    if not (isinstance(expr, CallExpr) and isinstance(expr.callee, RefExpr) and expr.callee.fullname in AXIS_SET):
        return None
    args: list[Any] = []
    sizes: dict[str, Any] = {}
    for arg_name, arg in zip(expr.arg_names, expr.args, strict=True):
        value = constant_fold_expr(arg, call.module)
        if value is None:
            return None
        if arg_name is None:
            args.append(value)
        else:
            sizes[arg_name] = value
    try:
        return AxisSet(*args, **sizes)
    except (VisaError, TypeError):
        return None
