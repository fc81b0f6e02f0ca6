"""Stable codes per diagnostic: each place in visa that raises a :class:`~visa.errors.VisaError` is one
diagnostic, with its own code (``V3012``), listed with its meaning, the manual's rule and the fix in
``docs/errors.md``.

A diagnostic is named by its *site key*, ``"<file stem>.<function> <ErrorClass>: <first words of the
message>"`` (``"plan._check_axes LayoutError: does not use axis"``), which survives edits elsewhere in the
file and moves of the file to another package.  :data:`visa.diagnostic_codes.CODES` maps each key to its
code; an error looks its code up when it is built, from the line that built it (the file's syntax tree maps
the line to the key), and falls back to its class's code (``V300``) when the site is not in the catalogue.

The codes' first digit is the family of the error class (1 mapping, 2 dtype, 3 layout, 4 hardware limit,
5 address, 6 typestate, 7 unsupported, 8 poison, 9 resource, 0 other); a retired code is never reused.

This module is the lookup, at the bottom of the package (errors import it); the catalogue that assigns the
codes and writes the page imports the whole package and lives at the top, in :mod:`visa.catalogue`.
Maintenance (``tests/test_diagnostics.py`` fails until both are done)::

    python -m visa.catalogue --assign      # give every new raise site the next free code of its family
    python -m visa.catalogue --catalogue   # rewrite docs/errors.md (and docs/manual.md)

>>> site_key("plan.py", "_check_axes", "LayoutError", "{…} does not use axis {…} of {…}")
'plan._check_axes LayoutError: does not use axis'
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Site", "site_key", "code_at", "PACKAGE", "PLACEHOLDER"]

#: The directory of the ``visa`` package (a site outside it has no catalogued code).
PACKAGE = Path(__file__).resolve().parent

#: What an interpolated part of a message reads as in a template.
PLACEHOLDER = "{…}"

_WORDS = 4
_WORD = re.compile(r"[A-Za-z0-9_'\-]+")


def site_key(filename: str, qualname: str, cls: str, template: str) -> str:
    """The catalogue key of a raise site: its file's stem, its function, its error class, and the first words
    of its message's literal text (which tell two refusals of one class in one function apart)."""
    literal = template.replace(PLACEHOLDER, " ")
    words = _WORD.findall(literal)[:_WORDS]
    stem = Path(filename).stem
    where = f"{stem}.{qualname}" if qualname else stem
    return f"{where} {cls}: {' '.join(w.lower() for w in words)}".rstrip(": ").rstrip()


def _template(node: ast.expr | None) -> str:
    """A message expression's literal text, with ``{…}`` for every part only known at run time."""
    if node is None:
        return ""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else PLACEHOLDER
                       for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _template(node.left) + _template(node.right)
    return PLACEHOLDER


def _shown(node: ast.expr | None) -> str:
    """A message expression's literal text with every run-time part shown by what it names: ``<axis>`` for
    ``{axis!r}``, ``<dtype.name>``; ``<…>`` for a part that is not a plain name (``visa explain``)."""
    if node is None:
        return ""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        out = []
        for v in node.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                out.append(v.value)
            else:
                inner = v.value if isinstance(v, ast.FormattedValue) else v
                text = ast.unparse(inner) if isinstance(inner, (ast.Name, ast.Attribute)) else "…"
                out.append(f"<{text.removeprefix('self.').lstrip('_')}>")
        return "".join(out)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _shown(node.left) + _shown(node.right)
    return "<…>"


@dataclass(frozen=True)
class Site:
    """One place that builds a :class:`~visa.errors.VisaError`: where it is and what its message says."""

    path: Path
    line: int
    end_line: int
    qualname: str
    cls: str
    message: str
    fix: str
    call: str
    manual_line: int | None = None
    doc: str = ""  # the enclosing function's docstring (its citations are the rule when the message has none)
    shown: str = ""  # the message with its run-time parts named (``<axis>``; :func:`_shown`)
    shown_fix: str = ""  # the fix so
    key: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", site_key(str(self.path), self.qualname, self.cls, self.message))


def _call_name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _module_strings(tree: ast.Module) -> dict[str, str]:
    out: dict[str, str] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = stmt.value.value
    return out


def _sites_in(path: Path, source: str, is_error: set[str] | None) -> list[Site]:
    """Every call in ``source`` of a name ending in ``Error`` (or, with ``is_error``, of those names)."""
    tree = ast.parse(source)
    strings = _module_strings(tree)
    sites: list[Site] = []

    def is_error_name(name: str) -> bool:
        return name in is_error if is_error is not None else name.endswith("Error")

    def choices(scope: ast.AST) -> dict[str, list[str]]:
        """``cls = AError if ... else BError`` in ``scope`` (a function: a ``cls(...)`` elsewhere is not one)."""
        chosen: dict[str, list[str]] = {}
        for node in ast.walk(scope):
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and isinstance(node.value, ast.IfExp)):
                options = [node.value.body, node.value.orelse]
                if all(isinstance(o, ast.Name) and is_error_name(o.id) for o in options):
                    chosen[node.targets[0].id] = [o.id for o in options if isinstance(o, ast.Name)]
        return chosen

    def kw(node: ast.Call, name: str) -> ast.expr | None:
        return next((k.value for k in node.keywords if k.arg == name), None)

    def visit(node: ast.AST, qual: list[str], doc: str, chosen: dict[str, list[str]]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = choices(child) if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else {}
                visit(child, [*qual, child.name], ast.get_docstring(child) or doc, inner)
                continue
            if isinstance(child, ast.Call):
                name = _call_name(child)
                classes: list[str] = []
                message = child.args[0] if child.args else kw(child, "message")
                if name is not None and is_error_name(name):
                    classes = [name]
                elif name is not None and name in chosen:  # cls = AError if ... else BError; cls(...)
                    classes = chosen[name]
                elif child.args and isinstance(child.args[0], ast.Name) and is_error_name(child.args[0].id):
                    classes = [child.args[0].id]  # a factory: fail(AError, "message", ...)
                    message = child.args[1] if len(child.args) > 1 else None
                for name in classes:
                    call = kw(child, "call")
                    call_text = (call.value if isinstance(call, ast.Constant) and isinstance(call.value, str)
                                 else strings.get(call.id, "") if isinstance(call, ast.Name) else "")
                    line = kw(child, "line")
                    sites.append(Site(path, child.lineno, child.end_lineno or child.lineno, ".".join(qual), name,
                                      _template(message), _template(kw(child, "fix")) if kw(child, "fix") else "",
                                      call_text,
                                      line.value if isinstance(line, ast.Constant) and isinstance(line.value, int)
                                      else None, doc, _shown(message), _shown(kw(child, "fix"))))
            visit(child, qual, doc, chosen)

    visit(tree, [], "", {})
    return sites


@functools.lru_cache(maxsize=256)
def _file_sites(filename: str) -> tuple[Site, ...]:
    try:
        source = Path(filename).read_text(encoding="utf-8")
        return tuple(_sites_in(Path(filename), source, None))
    except (OSError, SyntaxError, ValueError):
        return ()


def code_at(filename: str, line: int, cls: str) -> str | None:
    """The catalogued code of the ``cls`` built at ``filename:line`` (``None`` if that site has none)."""
    from visa.diagnostic_codes import CODES

    best: Site | None = None
    for site in _file_sites(filename):
        if site.cls == cls and site.line <= line <= site.end_line:
            if best is None or site.end_line - site.line < best.end_line - best.line:
                best = site
    return CODES.get(best.key) if best is not None else None
