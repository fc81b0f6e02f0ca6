"""The mypy plugin: layout errors at type-check time.

Enable it with ``[tool.mypy] plugins = ["visa.mypy"]`` in ``pyproject.toml``.  Then

- ``m["..."]`` — in an annotation or as a value — is the type ``m[Literal["<canonical text> (<axis sizes>)"]]``
  (:mod:`visa.mapping.static`), so equivalent spellings are one type and different layouts are not;
  a malformed mapping or an unknown axis is an error at its line, with the runtime's message;
- every tensor and stage method (``to_dm``, ``fetch``, ``collect``, ``commit``, ``transpose``, ...) gets its
  exact result type, and every refusal that depends only on dtypes and mappings is reported at the line of
  the call with the runtime's message, by calling the same functions the runtime calls (the engines' pure
  ``plan``, :func:`visa.memory.layout.check_placement`, :func:`visa.mapping.sequencer.derive`).

The hooks are pure functions of the types and the module's source; the plugin never runs a kernel.  The
hardware profile is RNGD unless ``[tool.visa] profile = "RNGD-S"`` says otherwise in the ``pyproject.toml``
mypy reads; :meth:`VisaPlugin.report_config_data` reports it, with a digest of the rules' sources, so that
mypy's cache is invalidated when either changes.

A module with an annotation such as ``m["A"]`` (a text mypy's parser reads as the name ``A``) needs
:func:`~visa.mypy.mappings.fix_annotations` after every parse.  mypy runs the only hook that sees a fresh tree
(``get_additional_deps``) when it computes a module's dependencies, which it skips when it re-parses a module
whose cache entry is valid but one of whose dependencies changed (a helper module edited, or visa installed
at another location: the cache then reported ``Name "A" is not defined`` until it was deleted, issue 29).  So
:meth:`VisaPlugin.report_config_data` never validates the cache entry of such a module: mypy parses it afresh
each run (its dependents keep their cache: the interface hash does not change).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from mypy.nodes import Expression, Import, ImportAll, ImportBase, ImportFrom, MypyFile, TypeInfo, Var
from mypy.options import Options
from mypy.plugin import (
    AnalyzeTypeContext,
    FunctionContext,
    MethodContext,
    Plugin,
    ReportConfigContext,
)
from mypy.types import AnyType, Instance, Type, TypeOfAny

from visa.hw import RNGD, HardwareProfile
from visa.hw import profile as hw_profile
from visa.mapping import Mapping
from visa.mypy import hooks
from visa.mypy.mappings import (
    LITERAL_M_NAMES,
    M_NAMES,
    ModuleFacts,
    Unresolved,
    decode,
    fix_annotations,
    is_mapping_expr,
    needs_parse_fix,
)
from visa.mypy.typeargs import TENSOR_MEMORY, mapping_of

__all__ = ["plugin", "VisaPlugin", "decode"]


class VisaPlugin(Plugin):
    """The hooks (see the module docstring).  One instance per mypy run."""

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        self.hw: HardwareProfile = _configured_profile(options)
        self._facts: dict[str, tuple[MypyFile, ModuleFacts]] = {}
        self._busy = False  # analysing a tensor annotation with mypy's own logic (see hooks.tensor_annotation)
        self._digest: str | None = None
        #: the Vector Engine pass state after each vector call expression (visa.mypy.vector), by node identity
        self.vector_states: dict[int, tuple[Expression, Any]] = {}
        #: the level mappings each stream or tensor call expression produced, spelled as the source writes them
        #: (a type carries the canonical spelling; messages name a mapping as the runtime does), by node identity
        self.spelled: dict[int, tuple[object, tuple[Mapping, ...]]] = {}

    # -- cache ---------------------------------------------------------------------------------------------
    def report_config_data(self, ctx: ReportConfigContext) -> object:
        """The profile and a digest of the rules, for modules outside the standard library and site-packages;
        when mypy checks a cache entry (``is_check``) of a module that needs the parse fix, a value it never
        wrote, so that the module is parsed afresh (module docstring)."""
        if "typeshed" in ctx.path or "site-packages" in ctx.path:
            return None
        if self._digest is None:
            self._digest = _rules_digest()
        data: dict[str, object] = {"visa.mypy": self._digest, "profile": self.hw.name}
        if ctx.is_check and needs_parse_fix(ctx.path):
            data["parsed afresh"] = True
        return data

    def get_additional_deps(self, file: MypyFile) -> list[tuple[int, str, int]]:
        """No extra dependency; fixes the parse of ``m["A"]`` annotations in modules that import visa."""
        if any(_imports_visa(imp) for imp in file.imports):
            fix_annotations(file)
        return []

    # -- dispatch ------------------------------------------------------------------------------------------
    def get_type_analyze_hook(self, fullname: str) -> Callable[[AnalyzeTypeContext], Type] | None:
        """``m["..."]``, a tensor type and a module-level mapping alias in an annotation."""
        if fullname in M_NAMES or fullname in LITERAL_M_NAMES:
            return partial(_guard, partial(hooks.m_annotation, self))
        if fullname in TENSOR_MEMORY and not self._busy:
            return partial(_guard, partial(hooks.tensor_annotation, self))
        sym = self.lookup_fully_qualified(fullname) if "." in fullname else None
        if sym is not None and isinstance(sym.node, Var) and self.alias_of(fullname) is not None:
            return partial(_guard, partial(hooks.alias_annotation, self, fullname))
        return None

    def get_method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        """Every Vector Engine stage method, and the methods of :data:`visa.mypy.hooks.METHODS` on their receivers."""
        cls, _, method = fullname.rpartition(".")
        if cls.startswith("visa.stream.vector.") and method.startswith("vector_"):
            return partial(_guard, partial(hooks.vector, self))
        handler = hooks.METHODS.get(method)
        if handler is not None and cls in hooks.RECEIVERS.get(method, ()):
            return partial(_guard, partial(handler, self))
        return None

    def get_function_hook(self, fullname: str) -> Callable[[FunctionContext], Type] | None:
        """``launch``, ``axes``, ``skew`` and the tensor constructors (:data:`visa.mypy.hooks.FUNCTIONS`)."""
        handler = hooks.FUNCTIONS.get(fullname)
        return partial(_guard, partial(handler, self)) if handler is not None else None

    # -- services for the hooks ----------------------------------------------------------------------------
    def tree(self, module: str) -> MypyFile | None:
        """The parsed module ``module`` (None when mypy has not loaded it)."""
        return self._modules.get(module) if self._modules is not None else None

    def facts(self, module: str) -> ModuleFacts | None:
        """What the module's source declares (axes, skews, aliases), scanned once per parsed module."""
        tree = self.tree(module)
        if tree is None:
            return None
        got = self._facts.get(module)
        if got is None or got[0] is not tree:
            got = (tree, ModuleFacts.scan(tree))
            self._facts[module] = got
        return got[1]

    def lookup_mapping(self, module: str, name: str) -> Mapping | None:
        """The mapping a module-level name holds, from its type (an imported alias); see mappings.Lookup."""
        tree = self.tree(module)
        sym = tree.names.get(name) if tree is not None else None
        if sym is None:
            return None
        node = sym.node
        if isinstance(node, Var) and node.type is not None:
            found = self.mapping_of(node.type)
            if found is not None:
                return found
        raise Unresolved(name)

    def alias_of(self, fullname: str) -> Expression | Type | None:
        """What a module-level name used as a type stands for: its ``m["..."]`` source, or its mapping type."""
        module, _, name = fullname.rpartition(".")
        facts = self.facts(module)
        rvalue = facts.aliases.get(name) if facts is not None else None
        if rvalue is not None and is_mapping_expr(rvalue):
            return rvalue
        sym = self.lookup_fully_qualified(fullname)
        if sym is not None and isinstance(sym.node, Var) and sym.node.type is not None:
            if self.mapping_of(sym.node.type) is not None:
                return sym.node.type
        return None

    def info(self, fullname: str) -> TypeInfo | None:
        """The class mypy knows under ``fullname`` (None when the module defining it is not loaded)."""
        sym = self.lookup_fully_qualified(fullname)
        return sym.node if sym is not None and isinstance(sym.node, TypeInfo) else None

    def mapping_of(self, typ: Type) -> Mapping | None:
        """The mapping a type describes (``m[Literal[...]]``), or None (Any, a bare Mapping, a type variable)."""
        return mapping_of(typ)

    def instance(self, fullname: str, args: list[Type]) -> Instance | None:
        """The type ``fullname[args]`` (None when the class is unknown or takes another number of arguments)."""
        info = self.info(fullname)
        if info is None or len(info.defn.type_vars) != len(args):
            return None
        return Instance(info, args)


#: Seconds spent in the hooks in this process, and their number (read by benchmarks/bench_mypy.py).
HOOK_SECONDS = [0.0, 0.0]


def _guard(hook: Callable[[Any], Type], ctx: Any) -> Type:
    """Run a hook; a bug in it (or in a rule it calls) must never crash mypy: say so in a note instead."""
    start = time.perf_counter()
    try:
        return hook(ctx)
    except Exception as exc:  # noqa: BLE001 - the boundary between mypy and visa
        default = getattr(ctx, "default_return_type", None)
        where = ctx.context
        msg = f"visa.mypy could not check this ({type(exc).__name__}: {exc}); please report it"
        api = ctx.api
        note = getattr(getattr(api, "msg", None), "note", None)
        if note is not None:
            note(msg, where)
        elif hasattr(api, "note"):
            api.note(msg, where)
        return default if default is not None else AnyType(TypeOfAny.from_error)
    finally:
        HOOK_SECONDS[0] += time.perf_counter() - start
        HOOK_SECONDS[1] += 1


def _imports_visa(imp: ImportBase) -> bool:
    if isinstance(imp, (ImportFrom, ImportAll)):
        return imp.id == "visa" or imp.id.startswith("visa.")
    if isinstance(imp, Import):
        return any(name == "visa" or name.startswith("visa.") for name, _ in imp.ids)
    return False


def _configured_profile(options: Options) -> HardwareProfile:
    """``[tool.visa] profile = "..."`` in the pyproject.toml mypy was configured from (default RNGD)."""
    path = options.config_file
    if not path or not path.endswith("pyproject.toml") or not os.path.exists(path):
        return RNGD
    import tomllib

    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    name = data.get("tool", {}).get("visa", {}).get("profile")
    return hw_profile(name) if isinstance(name, str) else RNGD


def _rules_digest() -> str:
    """A digest of every source file of the visa package (the rules the plugin calls, and itself)."""
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def plugin(version: str) -> type[Plugin]:
    """mypy's entry point: ``plugins = ["visa.mypy"]``."""
    del version
    return VisaPlugin

