"""Following a stream or a tensor back through the source: the calls a value went through, where it was made.

A value is followed through method calls (``a.fetch(...).collect(...)``) and through local variables the
function assigns exactly once (``s = a.fetch(...)``; ``s.collect(...)``).  Nothing here evaluates anything:
these are syntactic walks over mypy's parse tree, plus the types mypy already inferred for the
sub-expressions (:func:`type_of`: the checker visits a receiver before the call on it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mypy.nodes import ARG_POS, AssignmentStmt, CallExpr, Context, Expression, MemberExpr, NameExpr, Node
from mypy.types import CallableType, Type, get_proper_type

__all__ = ["walk", "assignments", "source_of", "root_of", "calls_before", "chain_of", "call_arg", "formal_arg",
           "type_of"]


#: The attributes of mypy's statement nodes that hold nested statements or blocks.
_NESTED = ("body", "else_body", "finally_body", "handlers", "bodies", "defs", "func", "items")


def walk(node: Any) -> Iterator[Any]:
    """``node`` and every statement and block nested in it: the blocks of ``if``/``for``/``while``/``with``/``try``
    (its handlers and ``finally`` included) and ``match``, nested and decorated functions, overloads, classes,
    a module's definitions."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        for attr in _NESTED:
            inner = getattr(n, attr, None)
            if isinstance(inner, list):
                stack.extend(inner)
            elif isinstance(inner, Node):
                stack.append(inner)


def assignments(fn: Any, name: str) -> list[Expression]:
    """The right-hand sides the function body assigns to the local ``name`` (nested blocks included)."""
    return [st.rvalue for st in walk(fn.body) if isinstance(st, AssignmentStmt)
            and any(isinstance(lv, NameExpr) and lv.name == name for lv in st.lvalues)]


def source_of(expr: Expression | None, fn: Any) -> Expression | None:
    """The expression a local name was assigned from, when the function assigns it exactly once."""
    if not isinstance(expr, NameExpr) or fn is None:
        return expr
    found = assignments(fn, expr.name)
    return found[0] if len(found) == 1 else None


def root_of(expr: Expression | None, fn: Any) -> Expression | None:
    """The expression that made the value ``expr`` holds: :func:`source_of` followed through local names
    (``a = x.view(); b = a; b`` is ``x.view()``); None when a name on the way is not assigned exactly once."""
    for _ in range(16):
        src = source_of(expr, fn)
        if src is None or src is expr:
            return src
        expr = src
    return expr


def calls_before(context: Context, fn: Any) -> list[CallExpr]:
    """The method calls a stream went through before this call, nearest first (through one-time variables)."""
    out: list[CallExpr] = []
    node: Expression | None = context.callee.expr if isinstance(context, CallExpr) and \
        isinstance(context.callee, MemberExpr) else None
    for _ in range(64):
        node = source_of(node, fn)
        if not (isinstance(node, CallExpr) and isinstance(node.callee, MemberExpr)):
            break
        out.append(node)
        if node.callee.name in ("begin", "begin_interleaved"):
            break
        node = node.callee.expr
    return out


def chain_of(context: Context, fn: Any = None) -> tuple[str | None, tuple[str, ...] | None]:
    """For a call whose stream is visible back to ``X.main.begin(...)``/``X.sub.begin(...)`` (one expression,
    or local variables assigned once): the context's name and the stage methods called before this one."""
    calls = calls_before(context, fn)
    tu = calls[-1].callee if calls else None
    if isinstance(tu, MemberExpr) and tu.name in ("begin", "begin_interleaved"):
        if isinstance(tu.expr, MemberExpr) and tu.expr.name in ("main", "sub"):
            return tu.expr.name, tuple(c.callee.name for c in reversed(calls[:-1]) if isinstance(c.callee,
                                                                                                  MemberExpr))
    return None, None


def call_arg(call: CallExpr, index: int, name: str) -> Expression | None:
    """Argument ``index`` (or keyword ``name``) of a call expression (``self`` not counted)."""
    for k, (arg_name, arg) in enumerate(zip(call.arg_names, call.args, strict=True)):
        if arg_name == name or (arg_name is None and k == index):
            return arg
    return None


def formal_arg(call: CallExpr, name: str, api: Any) -> Expression | None:
    """The argument a call passes to its formal parameter ``name``, from the callee's signature as mypy
    inferred it (positional arguments matched by position, keywords by name)."""
    for arg_name, arg in zip(call.arg_names, call.args, strict=True):
        if arg_name == name:
            return arg
    callee = get_proper_type(type_of(api, call.callee))
    if not isinstance(callee, CallableType):
        return None
    for k, (kind, arg_name, arg) in enumerate(zip(call.arg_kinds, call.arg_names, call.args, strict=True)):
        if kind == ARG_POS and arg_name is None and k < len(callee.arg_names) and callee.arg_names[k] == name:
            return arg
    return None


def type_of(api: Any, expr: Expression | None) -> Type | None:
    """The type mypy already inferred for a sub-expression of the statement being checked (None if none)."""
    if expr is None:
        return None
    lookup = getattr(api, "lookup_type_or_none", None)
    got = lookup(expr) if lookup is not None else None
    return got if isinstance(got, Type) else None
