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

Maintenance (``tests/test_diagnostics.py`` fails until both are done)::

    python -m visa.diagnostics --assign      # give every new raise site the next free code of its family
    python -m visa.diagnostics --catalogue   # rewrite docs/errors.md (and docs/manual.md)

>>> site_key("plan.py", "_check_axes", "LayoutError", "{…} does not use axis {…} of {…}")
'plan._check_axes LayoutError: does not use axis'
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Site", "Entry", "site_key", "code_at", "scan", "assign", "entry", "explain", "catalogue", "main",
           "PACKAGE", "PLACEHOLDER"]

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

    chosen: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.IfExp)):
            options = [node.value.body, node.value.orelse]
            if all(isinstance(o, ast.Name) and is_error_name(o.id) for o in options):
                chosen[node.targets[0].id] = [o.id for o in options if isinstance(o, ast.Name)]

    def kw(node: ast.Call, name: str) -> ast.expr | None:
        return next((k.value for k in node.keywords if k.arg == name), None)

    def visit(node: ast.AST, qual: list[str], doc: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, [*qual, child.name], ast.get_docstring(child) or doc)
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
                                      else None, doc))
            visit(child, qual, doc)

    visit(tree, [], "")
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


# -- the catalogue: scanning, assigning, the docs page -------------------------------------------------------


def _error_classes() -> dict[str, type]:
    """Every :class:`~visa.errors.VisaError` subclass defined in the package, by name (imports the package)."""
    import importlib
    import pkgutil

    import visa
    from visa.errors import VisaError

    for info in pkgutil.walk_packages(visa.__path__, "visa."):
        if not info.name.startswith(("visa.mypy", "visa.cli")):
            importlib.import_module(info.name)
    out: dict[str, type] = {}
    todo: list[type] = [VisaError]
    while todo:
        cls = todo.pop()
        out[cls.__name__] = cls
        todo.extend(cls.__subclasses__())
    return out


def scan(root: Path = PACKAGE) -> list[Site]:
    """Every site under ``root`` that builds a :class:`~visa.errors.VisaError` (found in the syntax trees)."""
    names = set(_error_classes())
    sites: list[Site] = []
    for path in sorted(root.rglob("*.py")):
        sites.extend(_sites_in(path, path.read_text(encoding="utf-8"), names))
    return sites


def _family(cls: type) -> str:
    return str(getattr(cls, "code", "V000"))[1]


def assign(sites: list[Site], codes: dict[str, str]) -> dict[str, str]:
    """``codes`` with every uncatalogued site given the next free code of its class's family."""
    classes = _error_classes()
    out = dict(codes)
    used = set(codes.values())
    for site in sites:
        if site.key in out:
            continue
        family = _family(classes[site.cls])
        n = 1 + max((int(c[2:]) for c in used if c[1] == family), default=0)
        out[site.key] = code = f"V{family}{n:03d}"
        used.add(code)
    return out


def write_codes(codes: dict[str, str], retired: dict[str, str]) -> None:
    """Rewrite ``visa/diagnostic_codes.py`` (sorted by code)."""
    head = ("# ruff: noqa: E501 - one line per diagnostic, as the maintenance tool writes them\n"
            '"""The code of every diagnostic (see :mod:`visa.diagnostics`): one line per raise site.\n\n'
            "Add a line for a new raise site (``python -m visa.diagnostics --assign`` does it); never change or\n"
            'reuse a code: a site that is gone moves to ``RETIRED``.\n"""\n\n'
            "CODES: dict[str, str] = {\n")
    body = "".join(f"    {k!r}: {v!r},\n" for k, v in sorted(codes.items(), key=lambda kv: (kv[1], kv[0])))
    tail = "}\n\n#: Codes of sites that no longer exist (never reused).\nRETIRED: dict[str, str] = {\n"
    tail += "".join(f"    {k!r}: {v!r},\n" for k, v in sorted(retired.items(), key=lambda kv: kv[1])) + "}\n"
    (PACKAGE / "diagnostic_codes.py").write_text(head + body + tail)


_FAMILIES = {"0": "Other refusals", "1": "Mappings and axes", "2": "Element types and values",
             "3": "Layouts", "4": "Hardware limits", "5": "Addresses and allocation", "6": "Stage order (typestate)",
             "7": "Unsupported features", "8": "Poison (unwritten memory)", "9": "Resources"}


def _rule(site: Site, cls: type) -> str:
    from visa.manual import cite

    text = f"{site.message} {site.fix}"
    found = re.findall(r"L\d{1,4}(?:\s*[–-]\s*L?\d{1,4})?", text)
    if site.manual_line is not None:
        found.insert(0, f"L{site.manual_line}")
    if not found:  # the function's docstring, else the error class's (not the base class's: it cites examples)
        found = re.findall(r"L\d{1,4}(?:\s*[–-]\s*L?\d{1,4})?", site.doc)
    if not found and cls.__name__ != "VisaError":
        found = re.findall(r"L\d{1,4}(?:\s*[–-]\s*L?\d{1,4})?", cls.__doc__ or "")
    seen: list[str] = []
    for f in found:
        named = cite(f)
        if named not in seen:
            seen.append(named)
    return "; ".join(seen)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").replace("`", "'").strip()


@dataclass(frozen=True)
class Entry:
    """A diagnostic as the catalogue describes it (``*…*`` stands for what the message fills in)."""

    cls: str
    where: str
    meaning: str
    rule: str
    fix: str


def entry(site: Site, classes: dict[str, type]) -> Entry:
    """The catalogue's description of one raise site: its class, where it is, what it means, the manual's rule and
    the fix."""
    cls = classes[site.cls]
    where = site.call or f"{site.path.stem}.{site.qualname}"
    summary = " ".join((cls.__doc__ or "").split("\n\n")[0].split())
    message = " ".join(re.sub(r"\{…\}", "*…*", site.message).split())
    if len(_WORD.findall(site.message.replace(PLACEHOLDER, " "))) < 4:  # mostly filled in at run time
        message = f"{summary} {f'(*{message}*)' if message.strip('*… ') else ''}".strip()
    fix = " ".join(re.sub(r"\{…\}", "*…*", site.fix).split())
    return Entry(site.cls, where, message, _rule(site, cls), fix)


def explain(code: str) -> str | None:
    """What ``visa explain CODE`` prints: the catalogue's entry for a code, or ``None`` for an unknown code."""
    from visa.diagnostic_codes import CODES

    code = code.upper()
    sites = [s for s in scan() if CODES.get(s.key) == code]
    if not sites:
        return None
    e = entry(sites[0], _error_classes())
    return "\n".join([f"{code}  {e.cls} in {e.where}", f"  meaning: {e.meaning}",
                      f"  the manual's rule: {e.rule or '—'}", f"  fix: {e.fix or '—'}"])


def catalogue(sites: list[Site], codes: dict[str, str]) -> str:
    """The Markdown page ``docs/errors.md``: every code, its class, what it means, the manual's rule, the fix."""
    classes = _error_classes()
    by_code: dict[str, list[Site]] = {}
    for site in sites:
        by_code.setdefault(codes[site.key], []).append(site)
    lines = ["# Error catalogue", "",
             "<!-- generated by `python -m visa.diagnostics --catalogue`; do not edit -->", "",
             "Every refusal visa makes carries a stable code: `str(error)` ends with it (`[V3012]`), `visa run` prints",
             "it with your file and line, and the mypy plugin reports it as the error code `visa-V3012`, a sub-code",
             "of `visa`: `# type: ignore[visa-V3012]` silences that diagnostic on a line, and",
             "`disable_error_code = [\"visa-V3012\"]` everywhere (with a mypy that reads plugins' codes in its",
             "options, python/mypy#19719: the newest does; 1.16 warns and ignores it); `visa` silences them all.",
             "`error.code` holds the code; `type(error).code` is the class's family code.", "",
             "A message's text in *italics* stands for what the message fills in from your kernel (a name, a size, a",
             "mapping). The manual's rules are cited by section title and line (`§Sequencer › Insufficient Input,",
             "L1639`): the section names are the manual's headings.", ""]
    for family in sorted({c[1] for c in by_code}):
        lines += [f"## V{family}xxx: {_FAMILIES.get(family, 'Other')}", "",
                  "| code | error | where | meaning | the manual's rule | fix |", "|---|---|---|---|---|---|"]
        for code in sorted(c for c in by_code if c[1] == family):
            e = entry(by_code[code][0], classes)
            lines.append(f"| <a id=\"{code}\"></a>{code} | `{e.cls}` | `{e.where}` | {_cell(e.meaning)} | "
                         f"{_cell(e.rule) or '—'} | {_cell(e.fix) or '—'} |")
        lines.append("")
    return "\n".join(lines)


def _codes() -> tuple[dict[str, str], dict[str, str]]:
    from visa.diagnostic_codes import CODES, RETIRED

    return dict(CODES), dict(RETIRED)


def main(argv: list[str] | None = None) -> int:
    """``python -m visa.diagnostics --assign | --catalogue [PATH] | --check``."""
    args = sys.argv[1:] if argv is None else argv
    sites = scan()
    codes, retired = _codes()
    if "--assign" in args:
        keys = {s.key for s in sites}
        gone = {k: v for k, v in codes.items() if k not in keys}
        retired |= gone  # a code is never reused: the retired ones take part in choosing the next free one
        codes = assign(sites, {k: v for k, v in codes.items() if k in keys} | {f"retired {v}": v
                                                                               for v in retired.values()})
        codes = {k: v for k, v in codes.items() if not k.startswith("retired ")}
        write_codes(codes, retired)
        print(f"{len(codes)} codes; {len(gone)} retired now")
        return 0
    if "--catalogue" in args:
        k = args.index("--catalogue")
        target = Path(args[k + 1]) if len(args) > k + 1 else PACKAGE.parent / "docs" / "errors.md"
        target.write_text(catalogue(sites, codes) + "\n")
        from visa.manual import page

        (target.parent / "manual.md").write_text(page() + "\n")
        print(f"wrote {target} and {target.parent / 'manual.md'}")
        return 0
    missing = [s for s in sites if s.key not in codes]
    for s in missing:
        print(f"{s.path}:{s.line}: no code for {s.key!r}")
    return 1 if missing else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
