"""The catalogue of diagnostics: every raise site of the package with its code, meaning, rule and fix
(``docs/errors.md``), and the tool that keeps the codes (:mod:`visa.diagnostics` is the lookup errors use).

    python -m visa.catalogue --assign      # give every new raise site the next free code of its family
    python -m visa.catalogue --catalogue   # rewrite docs/errors.md (and docs/manual.md)

It imports every module of the package to find the error classes, so it sits at the top of the layers, with
the command line (``visa explain CODE``).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from visa.diagnostics import _WORD, PACKAGE, PLACEHOLDER, Site, _sites_in
from visa.snippets import Snippet

__all__ = ["Entry", "scan", "assign", "entry", "explain", "catalogue", "main", "normalise_code", "public_where"]


# -- the catalogue: scanning, assigning, the docs page -------------------------------------------------------


def _error_classes() -> dict[str, type]:
    """Every :class:`~visa.errors.VisaError` subclass defined in the package, by name (imports the package)."""
    import importlib
    import pkgutil

    from visa.errors import VisaError

    for info in pkgutil.walk_packages([str(PACKAGE)], "visa."):
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
            "Add a line for a new raise site (``python -m visa.catalogue --assign`` does it); never change or\n"
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
    where = site.call or public_where(site)
    summary = " ".join((cls.__doc__ or "").split("\n\n")[0].split())
    message = " ".join(re.sub(r"\{…\}", "*…*", site.message).split())
    if len(_WORD.findall(site.message.replace(PLACEHOLDER, " "))) < 4:  # mostly filled in at run time
        message = f"{summary} {f'(*{message}*)' if message.strip('*… ') else ''}".strip()
    fix = " ".join(re.sub(r"\{…\}", "*…*", site.fix).split())
    return Entry(site.cls, where, message, _rule(site, cls), fix)


def public_where(site: Site) -> str:
    """Where a site without a ``call=`` is, without private names: its module's dotted path and the public part
    of its qualified name (``visa.stream.vector.base.VeBase`` for ``VeBase._vrf``)."""
    module = ".".join(site.path.resolve().relative_to(PACKAGE.parent).with_suffix("").parts)
    public: list[str] = []
    for part in site.qualname.split(".") if site.qualname else []:
        if part.startswith("_"):
            break
        public.append(part)
    return ".".join([module, *public])


def normalise_code(code: str) -> str:
    """``V3079`` from ``V3079``, ``v3079`` or ``3079``."""
    code = code.strip().upper()
    return code if code.startswith("V") else f"V{code}"


def explain(code: str) -> str | None:
    """What ``visa explain CODE`` prints: the catalogue's entry for a code (``V3079``, ``v3079`` or ``3079``)
    with the message's run-time parts named (``<axis>``), and, where :mod:`visa.snippets` has them, a kernel
    that fails with this code and the same kernel fixed; ``None`` for an unknown code."""
    from visa.diagnostic_codes import CODES
    from visa.snippets import SNIPPETS
    from visa.snippets.without import WITHOUT_SNIPPET

    code = normalise_code(code)
    sites = [s for s in scan() if CODES.get(s.key) == code]
    if not sites:
        return None
    site = sites[0]
    e = entry(site, _error_classes())
    meaning = " ".join(site.shown.split()) if len(_WORD.findall(site.message.replace(PLACEHOLDER, " "))) >= 4 \
        else e.meaning.replace("*…*", "<…>")
    fix = " ".join(site.shown_fix.split()) or "—"
    lines = [f"{code}  {e.cls} in {e.where}", f"  meaning: {meaning}", f"  the manual's rule: {e.rule or '—'}",
             f"  fix: {fix}"]
    snippet = SNIPPETS.get(site.key)
    if snippet is None and site.key in WITHOUT_SNIPPET:
        lines += ["", "  example: none. " + WITHOUT_SNIPPET[site.key]]
    if snippet is not None:
        lines += ["", "  fails:", *(f"    {ln}".rstrip() for ln in snippet.failing.strip("\n").splitlines()),
                  "", "  fixed:", *(f"    {ln}".rstrip() for ln in snippet.fixed.strip("\n").splitlines())]
    return "\n".join(lines)


def catalogue(sites: list[Site], codes: dict[str, str]) -> str:
    """The Markdown page ``docs/errors.md``: every code, its class, what it means, the manual's rule, the fix."""
    from visa.snippets import SNIPPETS
    from visa.snippets.without import INTERNAL, WITHOUT_SNIPPET

    classes = _error_classes()
    by_code: dict[str, list[Site]] = {}
    for site in sites:
        by_code.setdefault(codes[site.key], []).append(site)
    lines = ["# Error catalogue", "",
             "<!-- generated by `python -m visa.catalogue --catalogue`; do not edit -->", "",
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
        examples: list[str] = []
        for code in sorted(c for c in by_code if c[1] == family):
            e = entry(by_code[code][0], classes)
            snippet = next((SNIPPETS[s.key] for s in by_code[code] if s.key in SNIPPETS), None)
            fix = _cell(e.fix) or "—"
            if snippet is not None:
                fix += f" ([example](#{code}-example))"
                examples += _example(code, e.cls, snippet)
            elif all(s.key in WITHOUT_SNIPPET for s in by_code[code]):
                why = WITHOUT_SNIPPET[by_code[code][0].key]
                fix += " (no example: an internal check)" if why.endswith(INTERNAL) else f" (no example: {why})"
            lines.append(f"| <a id=\"{code}\"></a>{code} | `{e.cls}` | `{e.where}` | {_cell(e.meaning)} | "
                         f"{_cell(e.rule) or '—'} | {fix} |")
        lines.append("")
        if examples:
            lines += [f"### V{family}xxx: failing programs and their fixes", "",
                      "Each program raises its code as it stands; the diff under it is the fix, after which it runs",
                      "(`tests/test_snippets.py` runs both; `visa explain CODE` prints both whole).", "", *examples]
    return "\n".join(lines)


def _example(code: str, cls: str, snippet: Snippet) -> list[str]:
    """The catalogue's section for one snippet: the failing program, and the fix as a diff of it."""
    import difflib

    failing, fixed = snippet.failing.strip("\n").splitlines(), snippet.fixed.strip("\n").splitlines()
    hunks = list(difflib.unified_diff(failing, fixed, "fails", "fixed", n=1, lineterm=""))[2:]
    diff = [("…" if k else "") if ln.startswith("@@") else ln for k, ln in enumerate(hunks)]
    diff = [ln for ln in diff if ln]
    return [f"<a id=\"{code}-example\"></a>", f"#### {code}: `{cls}`", "", "```python", *failing, "```", "",
            "```diff", *diff, "```", ""]


def _codes() -> tuple[dict[str, str], dict[str, str]]:
    from visa.diagnostic_codes import CODES, RETIRED

    return dict(CODES), dict(RETIRED)


def main(argv: list[str] | None = None) -> int:
    """``python -m visa.catalogue --assign | --catalogue [PATH] | --check``."""
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
