"""The plugin's hooks: mapping types, tensor annotations and constructors, and every stage method.

A hook reads the receiver's type arguments (dtype class, mapping types) and the call's argument types
(``m["..."]`` values, dtype classes, integers), rebuilds the :class:`~visa.mapping.Mapping` objects, calls the
function the runtime calls for that method (:mod:`visa.mypy.rules`) and returns the exact result type, or
reports the :class:`~visa.errors.VisaError`'s message at the line of the call.  Anything it cannot see
statically (``Any``, a bare ``Mapping``, a non-constant integer) is left unchecked, never guessed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from mypy.constant_fold import constant_fold_expr
from mypy.errorcodes import ErrorCode
from mypy.nodes import (
    CallExpr,
    Context,
    Decorator,
    Expression,
    IndexExpr,
    MemberExpr,
    NameExpr,
    RefExpr,
    StrExpr,
    TupleExpr,
)
from mypy.plugin import AnalyzeTypeContext, FunctionContext, MethodContext
from mypy.types import (
    AnyType,
    CallableType,
    Instance,
    LiteralType,
    RawExpressionType,
    Type,
    TypeOfAny,
    UnboundType,
    get_proper_type,
)

from visa import dtypes as dt
from visa.errors import VisaError
from visa.mapping import Mapping
from visa.memory.layout import TYPE_NAMES
from visa.mypy import collective, extensions, rules
from visa.mypy.chain import assignments, calls_before, chain_of, root_of, source_of, type_of
from visa.mypy.mappings import ModuleFacts, Unresolved, _value, encode, is_m, resolve
from visa.mypy.typeargs import (
    LEVELS,
    STATIC_M,
    STREAM,
    S,
    T,
    dtype_instance,
    dtype_of,
    mapping_of,
    memory_of,
    tensor_of,
)
from visa.stream.stages import STAGE_METHODS

if TYPE_CHECKING:
    from visa.mypy import VisaPlugin

__all__ = ["VISA", "error_code", "METHODS", "RECEIVERS", "FUNCTIONS", "Call", "static_type", "m_annotation",
           "tensor_annotation"]

#: The parent error code of every refusal the plugin reports (``disable_error_code = ["visa"]`` silences them).
VISA = ErrorCode("visa", "A layout rule of the visa package refuses the call", "General")

_CODES: dict[str, ErrorCode] = {}


def _register_codes() -> None:
    """Create every diagnostic's error code when the plugin loads, so mypy knows them before it reads
    ``disable_error_code`` / ``--disable-error-code`` (mypy ≥ 1.19 checks plugin codes after loading plugins;
    older releases warn about them in a configuration file and still honour them)."""
    import visa.errors as errors_module
    from visa.diagnostic_codes import CODES

    classes = {getattr(errors_module, n).code for n in errors_module.__all__}
    for code in sorted(set(CODES.values()) | classes):
        _CODES[code] = ErrorCode(f"visa-{code}", f"visa refusal {code} (docs/errors.md)", "General",
                                 sub_code_of=VISA)


def error_code(err: VisaError) -> ErrorCode:
    """The mypy error code of a refusal: ``visa-V3012`` for the diagnostic ``V3012`` (docs/errors.md), a
    sub-code of ``visa``, so ``disable_error_code = ["visa-V3012"]`` silences that diagnostic alone."""
    code = _CODES.get(err.code)
    if code is None:
        code = _CODES[err.code] = ErrorCode(f"visa-{err.code}", f"visa refusal {err.code} (docs/errors.md)",
                                            "General", sub_code_of=VISA)
    return code


_register_codes()

MAPPING = "visa.mapping.core.Mapping"


def static_type(plugin: VisaPlugin, mapping: Mapping) -> Type:
    """``m[Literal["<canonical text> (<sizes>)"]]`` for a mapping (a bare Mapping if mypy lacks the class)."""
    text = encode(mapping)
    str_type = plugin.instance("builtins.str", [])
    got = plugin.instance(STATIC_M, [LiteralType(text, str_type)]) if str_type is not None else None
    if got is None:
        got = plugin.instance(MAPPING, [])
    return got if got is not None else AnyType(TypeOfAny.special_form)


def _module_of(api: Any) -> str:
    """The module being analysed, from the semantic analyser (annotations) or the checker (calls)."""
    tree = getattr(api, "tree", None)
    if tree is not None:
        return str(tree.fullname)
    inner = getattr(api, "api", None)
    return str(getattr(inner, "cur_mod_id", ""))


def _facts(plugin: VisaPlugin, module: str) -> ModuleFacts:
    return plugin.facts(module) or ModuleFacts(module)


# -- m["..."] ------------------------------------------------------------------------------------------------
def _raw_text(arg: Type, literal: bool = True) -> str | None:
    """The mapping text of ``m["A % 8"]``'s argument, or of ``M[Literal["A % 8"]]``'s (the pyright spelling)."""
    if isinstance(arg, RawExpressionType) and isinstance(arg.literal_value, str):
        return arg.literal_value
    if isinstance(arg, UnboundType) and arg.original_str_expr is not None:
        return arg.original_str_expr
    if literal and isinstance(arg, UnboundType) and arg.name.rpartition(".")[2] == "Literal" and len(arg.args) == 1:
        return _raw_text(arg.args[0], literal=False)
    return None


def m_annotation(plugin: VisaPlugin, ctx: AnalyzeTypeContext) -> Type:
    """``m["A % 8"]`` in an annotation: the mapping type, or the runtime's error at the annotation's line."""
    args = ctx.type.args
    if not args:
        got = plugin.instance(MAPPING, [])
        return got if got is not None else AnyType(TypeOfAny.special_form)
    text = _raw_text(args[0]) if len(args) == 1 else None
    if text is None:
        ctx.api.fail('m[...] takes the text of one mapping, e.g. m["A / 8 # 256"]', ctx.context, code=VISA)
        return AnyType(TypeOfAny.from_error)
    module = _module_of(ctx.api)
    try:
        mapping = resolve(text, _facts(plugin, module), lambda name: plugin.lookup_mapping(module, name))
    except VisaError as err:
        ctx.api.fail(err.describe(), ctx.context, code=error_code(err))
        return AnyType(TypeOfAny.from_error)
    except Unresolved:
        return plugin.instance(MAPPING, []) or AnyType(TypeOfAny.special_form)
    return static_type(plugin, mapping)


def alias_annotation(plugin: VisaPlugin, fullname: str, ctx: AnalyzeTypeContext) -> Type:
    """A mapping alias used as a type (``Slice`` after ``Slice = m["A / 8 # 256"]``): its mapping type."""
    found = plugin.alias_of(fullname)
    if isinstance(found, Type):
        return found
    module, _, name = fullname.rpartition(".")
    facts = _facts(plugin, module)
    try:
        mapping = _value(found, facts, lambda n: plugin.lookup_mapping(module, n), frozenset({name})) \
            if found is not None else None
    except (VisaError, Unresolved):
        mapping = None  # the alias's own line reports its error
    if mapping is None:
        return AnyType(TypeOfAny.from_error)
    return static_type(plugin, mapping)


def m_value(plugin: VisaPlugin, ctx: MethodContext) -> Type:
    """``m["A % 8"]`` as a value: the same type as in an annotation."""
    expr = ctx.args[0][0] if ctx.args and ctx.args[0] else None
    if not isinstance(expr, StrExpr):
        return ctx.default_return_type
    call = Call(plugin, ctx, "m")
    recv = get_proper_type(ctx.type)
    explicit = isinstance(recv, Instance) and recv.type.fullname == "visa.mapping.core.MappingFactory"
    try:
        if explicit:
            mapping = _explicit_mapping(call, expr.value)
            if mapping is None:
                return ctx.default_return_type
        else:
            mapping = call.resolve_text(expr.value)
    except VisaError as err:
        ctx.api.fail(err.describe(), ctx.context, code=error_code(err))
        return AnyType(TypeOfAny.from_error)
    except Unresolved:
        return ctx.default_return_type
    return static_type(plugin, mapping)


def _explicit_mapping(call: Call, text: str) -> Mapping | None:
    """``ax.m["..."]`` on an explicit :class:`~visa.mapping.AxisSet`: ``Mapping.parse`` (what ``ax.m`` calls) with
    the axis set the source builds, when it is ``AxisSet(A=8, ...)`` with constant sizes (in the call, or in a
    variable assigned once that nothing declares more axes on); escapes resolve to module-level mappings."""
    from visa.mypy.explicit import axis_set_of
    from visa.mypy.mappings import _Scope

    index = call.ctx.context
    base = index.base if isinstance(index, IndexExpr) else None
    if isinstance(base, NameExpr) and call._is_local(base.name):  # m = ax.m (or AxisSet(...).m)
        base = source_of(base, call.function())
    if not (isinstance(base, MemberExpr) and base.name == "m"):
        return None
    axis_set = axis_set_of(base.expr, call)
    if axis_set is None:
        return None
    return Mapping.parse(text, axis_set, _Scope(_facts(call.plugin, call.module), call._lookup, frozenset()))


def axes_call(plugin: VisaPlugin, ctx: FunctionContext) -> Type:
    """``axes(...)`` / ``skew(...)``: a declaration the runtime refuses is an error at its line."""
    facts = _facts(plugin, _module_of(ctx.api))
    err = facts.errors.get((ctx.context.line, ctx.context.column))
    if err is not None:
        ctx.api.fail(err.describe(), ctx.context, code=error_code(err))
    return ctx.default_return_type


# -- a call being checked --------------------------------------------------------------------------------------
class Call:
    """One method or constructor call: its receiver's layout, its arguments, where to report."""

    def __init__(self, plugin: VisaPlugin, ctx: MethodContext | FunctionContext, name: str) -> None:
        self.plugin = plugin
        self.ctx = ctx
        self.name = name
        self.module = _module_of(ctx.api)
        self.where = _call_line(ctx.context)

    # receiver
    def receiver(self) -> Expression | None:
        """The expression the method is called on (``x`` in ``x.to_dm(...)``); None for a constructor."""
        c = self.ctx.context
        return c.callee.expr if isinstance(c, CallExpr) and isinstance(c.callee, MemberExpr) else None

    def recv_args(self) -> list[Type]:
        """The receiver's type arguments (none for a constructor or a receiver mypy does not know)."""
        t = get_proper_type(self.ctx.type) if isinstance(self.ctx, MethodContext) else None
        if isinstance(t, Instance):
            return list(t.args)
        return []

    # arguments (by formal position, excluding self)
    def arg_type(self, i: int) -> Type | None:
        """The type mypy inferred for formal argument ``i`` (None when the call does not pass it)."""
        types = self.ctx.arg_types
        return types[i][0] if i < len(types) and types[i] else None

    def arg_expr(self, i: int) -> Expression | None:
        """The expression the call passes as formal argument ``i`` (None when it passes none)."""
        args = self.ctx.args
        return args[i][0] if i < len(args) and args[i] else None

    def resolve_text(self, text: str) -> Mapping:
        """``m[text]`` as the runtime resolves it in this module."""
        return resolve(text, _facts(self.plugin, self.module), self._lookup)

    def _lookup(self, name: str) -> Mapping | None:
        if self._is_local(name):
            raise Unresolved(name)
        return self.plugin.lookup_mapping(self.module, name)

    def _is_local(self, name: str) -> bool:
        scope = getattr(self.ctx.api, "scope", None)
        fn = scope.current_function() if scope is not None else None
        if fn is None:
            return False
        return name in {a.variable.name for a in fn.arguments} or bool(assignments(fn, name))

    def arg_mapping(self, i: int) -> Mapping | None:
        """The mapping argument ``i`` holds, spelled as written when the call writes it (None if unknown)."""
        return self.expr_mapping(self.arg_expr(i), self.arg_type(i))

    def expr_mapping(self, expr: Expression | None, typ: Type | None = None) -> Mapping | None:
        """The mapping an expression of this function holds: ``m["..."]`` or a module alias spelled as written,
        else what its type says (``typ``, or the type mypy inferred for it)."""
        try:
            if isinstance(expr, IndexExpr) and is_m(expr.base) and isinstance(expr.index, StrExpr):
                return self.resolve_text(expr.index.value)
            if isinstance(expr, NameExpr) and expr.name in _facts(self.plugin, self.module).aliases \
                    and not self._is_local(expr.name):
                got = _value(expr, _facts(self.plugin, self.module), self._lookup, frozenset())
                if got is not None:
                    return got
        except (VisaError, Unresolved):
            return None  # the m[...] hook reports its own error
        return mapping_of(typ if typ is not None else type_of(self.ctx.api, expr))

    def arg_dtype(self, i: int) -> type[dt.Scalar] | None:
        """The dtype class argument ``i`` names (``i32``), or None."""
        return dtype_of(self.arg_type(i))

    def arg_int(self, i: int) -> int | None:
        """Argument ``i`` when the source spells it as an integer constant (``1 << 12``), else None."""
        expr = self.arg_expr(i)
        if expr is not None:
            got = constant_fold_expr(expr, self.module)
            if isinstance(got, int) and not isinstance(got, bool):
                return got
        t = get_proper_type(self.arg_type(i)) if self.arg_type(i) is not None else None
        if isinstance(t, Instance) and t.last_known_value is not None:
            t = t.last_known_value
        if isinstance(t, LiteralType) and isinstance(t.value, int) and not isinstance(t.value, bool):
            return t.value
        return None

    def function(self) -> Any:
        """The function (``FuncDef``) the call is in, or None at module level."""
        scope = getattr(self.ctx.api, "scope", None)
        return scope.current_function() if scope is not None else None

    def origin(self, expr: Expression | None) -> Any:
        """Where the tensor or view ``expr`` holds was made, when the source shows it (:mod:`visa.mypy.origin`)."""
        from visa.mypy.origin import origin_of

        return origin_of(expr, self)

    def expr_type(self, expr: Expression) -> Type | None:
        """The type of a name the call refers to (no other expression is re-checked)."""
        if not isinstance(expr, NameExpr):
            return None
        return self.ctx.api.get_expression_type(expr)

    # the kernel this call is in
    def num_chips(self) -> int | None:
        """``chip`` of the enclosing ``@device(chip=N)`` kernel (None outside a kernel, as on the host)."""
        scope = getattr(self.ctx.api, "scope", None)
        fn = scope.top_level_function() if scope is not None else None
        tree = getattr(self.ctx.api, "tree", None)
        if fn is None or tree is None:
            return None
        sym = tree.names.get(fn.name)
        node = sym.node if sym is not None else None
        if not isinstance(node, Decorator) or node.func is not fn:
            return None
        return device_chips(node, self.module)

    # results
    def fail(self, err: VisaError) -> None:
        """Report a refusal at the line of the method name, with the runtime's message."""
        self.ctx.api.fail(err.describe(), self.where, code=error_code(err))

    def run(self, rule: Callable[[], object]) -> bool:
        """Run a rule; report its refusal.  True when it passed."""
        try:
            rule()
        except VisaError as err:
            self.fail(err)
            return False
        except (Unresolved, rules.Unknown):
            return True
        except Exception as exc:  # a bug in a rule must not crash mypy: say so, without an error
            self.ctx.api.msg.note(f"visa plugin: could not check .{self.name}() ({type(exc).__name__}: {exc})",
                                  self.where)
            return True
        return True

    def instance(self, fullname: str, args: Sequence[Type]) -> Type:
        """The type ``fullname[args]``, or the signature's result type when mypy cannot build it."""
        got = self.plugin.instance(fullname, list(args))
        return got if got is not None else self.ctx.default_return_type

    def mapping_type(self, i: int) -> Type:
        """The type argument for mapping argument ``i`` (canonical; Any when unknown)."""
        mp = self.arg_mapping(i)
        if mp is not None:
            return static_type(self.plugin, mp)
        t = self.arg_type(i)
        return t if t is not None and mapping_of(t) is not None else AnyType(TypeOfAny.special_form)


def _call_line(context: Context) -> Context:
    """Report at the line of the method name: in a chain ``(a\\n .fetch(...)\\n .collect(...))`` every call
    starts on the chain's first line, but the user reads the error at ``.collect``."""
    if isinstance(context, CallExpr) and isinstance(context.callee, MemberExpr):
        callee = context.callee
        where = Context()
        line = callee.end_line if callee.end_line is not None else callee.line
        col = (callee.end_column - len(callee.name)) if callee.end_column is not None else callee.column
        where.set_line(line, col)
        return where
    return context


# -- layouts of receivers -------------------------------------------------------------------------------------
def layout(call: Call, names: Sequence[str]) -> tuple[type[dt.Scalar] | None, dict[str, Mapping] | None,
                                                      list[Type]]:
    """(dtype, {level: mapping} or None if any is unknown, raw type args) of the receiver."""
    args = call.recv_args()
    if len(args) < 1 + len(names):
        return None, None, [AnyType(TypeOfAny.special_form)] * (1 + len(names))
    d = dtype_of(args[0])
    levels = {}
    for name, a in zip(names, args[1:1 + len(names)], strict=True):
        mp = mapping_of(a)
        if mp is None:
            return d, None, args
        levels[name] = mp
    spelled = recorded(call, call.receiver())
    if spelled is not None and len(spelled) >= len(names) and \
            all(sp == levels[n] for sp, n in zip(spelled, names, strict=False)):
        levels = dict(zip(names, spelled, strict=False))
    return d, levels, args


def record(plugin: VisaPlugin, node: Context, levels: Sequence[Mapping | None]) -> None:
    """Remember the level mappings a call expression produced, spelled as written (see ``VisaPlugin.spelled``)."""
    if all(mp is not None for mp in levels):
        plugin.spelled[id(node)] = (node, tuple(mp for mp in levels if mp is not None))


def recorded(call: Call, expr: Expression | None) -> tuple[Mapping, ...] | None:
    """The spelled level mappings of the value ``expr`` holds (through local variables and ``.view()``)."""
    expr = root_of(expr, call.function())
    if isinstance(expr, CallExpr) and isinstance(expr.callee, MemberExpr) and expr.callee.name == "view" \
            and not expr.args:
        return recorded(call, expr.callee.expr)
    got = call.plugin.spelled.get(id(expr)) if expr is not None else None
    return got[1] if got is not None and got[0] is expr else None


def check_tensor_type(plugin: VisaPlugin, typ: Type, fail: Callable[[VisaError], None],
                      num_chips: int | None = None, address: int = 0) -> None:
    """:func:`~visa.memory.layout.check_placement` (manual L1070–1093) on a tensor type (not a view) whose dtype
    and mappings are all known."""
    kind, found = memory_of(typ), tensor_of(typ)
    if kind is None or kind[1] or found is None:
        return
    try:
        rules.placement(plugin.hw, kind[0], *found, address, num_chips)
    except VisaError as err:
        fail(err)


def tensor_annotation(plugin: VisaPlugin, ctx: AnalyzeTypeContext) -> Type:
    """``DmTensor[i32, m["1"], ...]`` in an annotation: mypy's own analysis, then the placement rules."""
    plugin._busy = True
    try:
        typ = ctx.api.analyze_type(ctx.type)
    finally:
        plugin._busy = False
    check_tensor_type(plugin, typ, lambda err: ctx.api.fail(err.describe(), ctx.context, code=error_code(err)))
    return typ


# -- tensors: constructors and DMA ------------------------------------------------------------------------------
def constructor(memory: str) -> Callable[[VisaPlugin, FunctionContext], Type]:
    """``DmTensor(ctx, i32, chip, cluster, slice, element, address)``: its type, and the placement rules."""

    def hook(plugin: VisaPlugin, ctx: FunctionContext) -> Type:
        call = Call(plugin, ctx, TYPE_NAMES[memory])
        names = LEVELS[memory]
        if memory == "host":
            return ctx.default_return_type
        d_type = dtype_instance(call.arg_type(1))
        args: list[Type] = [d_type, *(call.mapping_type(2 + k) for k in range(len(names)))]
        out = call.instance(T + TYPE_NAMES[memory], args)
        record(plugin, ctx.context, [call.arg_mapping(2 + k) for k in range(len(names))])
        address = call.arg_int(2 + len(names)) if memory != "trf" else 0
        check_tensor_type(plugin, out, call.fail, call.num_chips(), address if address is not None else 0)
        return out

    return hook


def host_make(plugin: VisaPlugin, ctx: MethodContext) -> Type:
    """``HostTensor.rand(i32, m["A"], rng)`` / ``.zeros`` / ``.from_numpy(array, i32, m["A"])``."""
    call = Call(plugin, ctx, "HostTensor")
    k = 1 if _method(ctx) == "from_numpy" else 0
    return call.instance(T + "HostTensor", [dtype_instance(call.arg_type(k)), call.mapping_type(k + 1)])


def _method(ctx: MethodContext | FunctionContext) -> str:
    c = ctx.context
    if isinstance(c, CallExpr) and isinstance(c.callee, MemberExpr):
        return c.callee.name
    return ""


def dma(plugin: VisaPlugin, ctx: MethodContext) -> Type:
    """``host.to_hbm``, ``hbm.to_dm``, ``hbm.to_hbm``, ``hbm.to_host``, ``dm.to_hbm``, ``dm.to_dm``."""
    method = _method(ctx)
    call = Call(plugin, ctx, method)
    recv = get_proper_type(ctx.type)
    if not isinstance(recv, Instance):
        return ctx.default_return_type
    if recv.type.fullname == "visa.tensors.indirect.GatherSource":
        return gather_move(plugin, ctx)
    kind = memory_of(recv)
    if kind is None:
        return ctx.default_return_type
    src_memory = kind[0]
    d, src_levels, args = layout(call, LEVELS[src_memory])
    # each destination level: the receiver's Chip (kept), or a call argument (spelled as written)
    sources: list[int | None]
    addr_i: int | None
    if method == "to_host":
        dst, sources, addr_i = "host", [0], None
    elif method == "to_dm":
        dst, sources, addr_i = "dm", [None, 0, 1, 2], 4
    elif method == "to_hbm" and src_memory in ("host", "hbm"):
        dst, sources, addr_i = "hbm", [0, 1], 3
    elif method == "to_hbm":
        dst, sources, addr_i = "hbm", [None, 0], 2
    else:
        return ctx.default_return_type
    types = [args[1] if k is None else call.mapping_type(k) for k in sources]
    out = call.instance(T + TYPE_NAMES[dst], [args[0], *types])
    dst_levels = {n: (src_levels or {}).get("Chip") if k is None else call.arg_mapping(k)
                  for n, k in zip(LEVELS[dst], sources, strict=True)}
    address = call.arg_int(addr_i) if addr_i is not None else 0
    if dst != "host":
        record(plugin, ctx.context, list(dst_levels.values()))
    if d is not None and src_levels is not None and all(v is not None for v in dst_levels.values()):
        known = {k: v for k, v in dst_levels.items() if v is not None}
        source = call.origin(call.receiver())
        stream = _dma_stream(call)
        if not call.run(lambda: rules.dma_move(plugin.hw, d, src_memory, src_levels, dst, known, address,
                                               call.num_chips(), source, stream)):
            return ctx.default_return_type
    return out


def _dma_stream(call: Call) -> tuple[Mapping, Mapping] | Literal[False] | None:
    """The explicit ``stream=(Time, Packet)`` of a DMA call: the two mappings, None when the call gives none,
    False when it gives one the source does not spell out (then the plan, which depends on it, is skipped)."""
    names = getattr(call.ctx, "callee_arg_names", [])
    if "stream" not in names:
        return None
    expr = call.arg_expr(names.index("stream"))
    if expr is None or (isinstance(expr, NameExpr) and expr.fullname == "builtins.None"):
        return None
    if isinstance(expr, TupleExpr) and len(expr.items) == 2:
        time, packet = (call.expr_mapping(e) for e in expr.items)
        if time is not None and packet is not None:
            return time, packet
    return False


def view_tile(plugin: VisaPlugin, ctx: MethodContext) -> Type:
    """``view.tile(dim, size, tile_mapping, start)``: :func:`visa.memory.layout.tile_offset` (what
    ``TensorView.tile`` calls) with the view's Element, and the same view type with the tile's Element."""
    from visa.memory.layout import tile_offset

    call = Call(plugin, ctx, "tile")
    recv = get_proper_type(ctx.type)
    if not isinstance(recv, Instance) or not recv.args:
        return ctx.default_return_type
    element, dim, tile = mapping_of(recv.args[-1]), call.arg_mapping(0), call.arg_mapping(2)
    size, start = call.arg_int(1), call.arg_int(3)
    if element is not None and dim is not None and tile is not None and size is not None and start is not None:
        where = f"{recv.type.name}.tile"
        if not call.run(lambda: tile_offset(element, dim, size, tile, start, where)):
            return ctx.default_return_type
    spelled = recorded(call, call.receiver())
    if spelled is not None:
        record(plugin, ctx.context, [*spelled[:-1], tile])
    args = [*recv.args[:-1], call.mapping_type(2)]
    return call.instance(recv.type.fullname, args)


def view_bitcast(plugin: VisaPlugin, ctx: MethodContext) -> Type:
    """``view.bitcast(D2)``: :func:`visa.tensors.handles.check_bitcast` (same width, L8589) with the view's dtype;
    the declared result (the view with ``D2``) keeps the spelled mappings."""
    from visa.tensors.handles import check_bitcast

    call = Call(plugin, ctx, "bitcast")
    src, dst = tensor_of(ctx.type), call.arg_dtype(0)
    if src is not None and dst is not None:
        element = src[1]["Element"]
        if not call.run(lambda: check_bitcast(src[0], dst, element)):
            return ctx.default_return_type
    spelled = recorded(call, call.receiver())
    if spelled is not None:
        record(plugin, ctx.context, list(spelled))
    return ctx.default_return_type


# -- streams -------------------------------------------------------------------------------------------------------
def _begin_tensor(call: Call, view_index: int, time: Mapping, time_type: Type) -> Type:
    """``BeginTensor[D, Chip, Cluster, Slice, Time, Element]`` from the view argument ``view_index`` (L1701)."""
    view = get_proper_type(call.arg_type(view_index))
    if not isinstance(view, Instance) or len(view.args) != 5:
        return call.ctx.default_return_type
    d, chip, cluster, slice_, element = view.args
    spelled = recorded(call, call.arg_expr(view_index))
    if spelled is not None and len(spelled) == 4:
        record(call.plugin, call.ctx.context, [*spelled[:3], time, spelled[3]])
    return call.instance(S + "BeginTensor", [d, chip, cluster, slice_, time_type, element])


def begin(plugin: VisaPlugin, ctx: MethodContext) -> Type:
    """``ctx.main.begin(dm.view())``: ``BeginTensor[D, Chip, Cluster, Slice, m["1"], Element]`` (L1701)."""
    one = Mapping.identity()
    return _begin_tensor(Call(plugin, ctx, "begin"), 0, one, static_type(plugin, one))


def begin_interleaved(plugin: VisaPlugin, ctx: MethodContext) -> Type:
    """``ctx.main.begin_interleaved(m["I"], lhs.view(), rhs.view())``: :func:`visa.engines.fetch.plan_interleave`
    with the views' types; ``BeginTensor[D, Chip, Cluster, Slice, I, Element]`` (L1843–1868)."""
    from visa.engines.fetch import plan_interleave

    call = Call(plugin, ctx, "begin_interleaved")
    axis = call.arg_mapping(0)
    lhs, rhs = (tensor_of(call.arg_type(k)) for k in (1, 2))
    if axis is None or lhs is None or rhs is None:
        return ctx.default_return_type
    if not call.run(lambda: plan_interleave(plugin.hw, axis, lhs, rhs)):
        return ctx.default_return_type
    return _begin_tensor(call, 1, axis, call.mapping_type(0))


def stage(plugin: VisaPlugin, ctx: MethodContext) -> Type:
    """A stream stage method: the rule of its engine, and the next stage's exact type."""
    method = _method(ctx)
    spec = rules.STAGES.get(method)
    if spec is None:
        return ctx.default_return_type
    call = Call(plugin, ctx, method)
    d, levels, args = layout(call, STREAM)
    fn = call.function()
    context, history = chain_of(ctx.context, fn)
    inputs = rules.StageInputs(
        hw=plugin.hw, dtype=d, layout=levels, stage=_stage_name(ctx),
        mapping=call.arg_mapping, dtype_arg=call.arg_dtype, integer=call.arg_int, expr=call.arg_expr,
        num_chips=call.num_chips, module=call.module, context=context or "main", history=history,
        calls=lambda: calls_before(ctx.context, fn), arg_type=call.arg_type, recv_args=call.recv_args,
        expr_type=call.expr_type, origin=call.origin)
    result = spec(inputs)
    if result.check is not None and d is not None and levels is not None:
        if not call.run(result.check):
            return ctx.default_return_type  # refused: the signature's type, so that one mistake is one error
    out_args: list[Type] = []
    spelled: list[Mapping | None] = []
    recv_levels = list(levels.values()) if levels is not None else []
    for k, part in enumerate(result.args):
        if k > 0:
            spelled.append(recv_levels[k - 1] if part is rules.SAME and k - 1 < len(recv_levels) else
                           call.arg_mapping(part.index) if isinstance(part, rules.ArgMapping) else
                           part if isinstance(part, Mapping) else
                           mapping_of(args[k]) if part is rules.SAME and k < len(args) else None)
        if part is rules.SAME:
            out_args.append(args[k])
        elif isinstance(part, rules.ArgMapping):
            out_args.append(call.mapping_type(part.index))
        elif isinstance(part, rules.ArgDtype):
            out_args.append(dtype_instance(call.arg_type(part.index)))
        elif isinstance(part, Mapping):
            out_args.append(static_type(plugin, part))
        elif isinstance(part, type) and issubclass(part, dt.Scalar):
            out_args.append(_dtype_type(plugin, part))
        else:
            out_args.append(AnyType(TypeOfAny.special_form))
    if result.cls.startswith("visa."):
        record(plugin, ctx.context, spelled)
        return call.instance(result.cls, out_args)
    return ctx.default_return_type


def _dtype_type(plugin: VisaPlugin, d: type[dt.Scalar]) -> Type:
    got = plugin.instance(f"visa.dtypes.{d.__name__}", [])
    return got if got is not None else AnyType(TypeOfAny.special_form)


def _stage_name(ctx: MethodContext) -> str:
    t = get_proper_type(ctx.type)
    return t.type.name if isinstance(t, Instance) else ""


def vector(plugin: VisaPlugin, ctx: MethodContext) -> Type:
    """A Vector Engine stage (``vector_init`` and every ``vector_*`` method): :func:`visa.mypy.vector.hook`."""
    from visa.mypy.vector import hook

    return hook(plugin, ctx)


# -- dispatch tables (read by VisaPlugin) ----------------------------------------------------------------------
Handler = Callable[["VisaPlugin", Any], Type]

METHODS: dict[str, Handler] = {
    "__getitem__": m_value,
    "to_dm": dma, "to_hbm": dma, "to_host": dma,
    "rand": host_make, "zeros": host_make, "from_numpy": host_make,
    "tile": view_tile, "bitcast": view_bitcast,
    "begin": begin, "begin_interleaved": begin_interleaved,
}
RECEIVERS: dict[str, frozenset[str]] = {
    "__getitem__": frozenset({"visa.mapping.core.MappingSyntax", "visa.mapping.core.MappingFactory"}),
    "to_dm": frozenset({T + "HbmTensor", T + "DmTensor", T + "HbmTensorView", T + "DmTensorView",
                        "visa.tensors.indirect.GatherSource"}),
    "to_hbm": frozenset({T + "HostTensor", T + "HbmTensor", T + "DmTensor", T + "HbmTensorView", T + "DmTensorView",
                         "visa.tensors.indirect.GatherSource"}),
    "to_host": frozenset({T + "HbmTensor", T + "HbmTensorView"}),
    "rand": frozenset({T + "HostTensor"}), "zeros": frozenset({T + "HostTensor"}),
    "from_numpy": frozenset({T + "HostTensor"}),
    "tile": frozenset({T + "HbmTensorView", T + "DmTensorView"}),
    "bitcast": frozenset({T + "HbmTensorView", T + "DmTensorView"}),
    "begin": frozenset({"visa.stream.TuContext"}), "begin_interleaved": frozenset({"visa.stream.TuContext"}),
}
collective.extend(METHODS, RECEIVERS)
extensions.extend(METHODS, RECEIVERS)
for _name, _stages in STAGE_METHODS.items():
    METHODS[_name] = vector if _name == "vector_init" else stage
    RECEIVERS[_name] = frozenset(S + s for s in _stages)


def device_chips(node: Decorator, module: str) -> int | None:
    """``chip`` of a ``@device(chip=N)`` kernel's decorator (1 when not given; None when not a literal or when
    the function is not a ``@device`` kernel)."""
    for dec in node.decorators:
        if isinstance(dec, CallExpr) and isinstance(dec.callee, RefExpr) and \
                dec.callee.fullname in ("visa.context.device", "visa.device"):
            for name, arg in zip(dec.arg_names, dec.args, strict=True):
                if name in (None, "chip"):
                    got = constant_fold_expr(arg, module)
                    return got if isinstance(got, int) else None
            return 1
    return None


def _chip_of(typ: Type) -> Mapping | None:
    """The Chip mapping of a device tensor (or view) type, when its type argument is known."""
    p = get_proper_type(typ)
    if not isinstance(p, Instance):
        return None
    got = memory_of(p)
    if got is None or not LEVELS[got[0]] or LEVELS[got[0]][0] != "Chip" or len(p.args) < 2:
        return None
    return mapping_of(p.args[1])


def _launch_chips(plugin: VisaPlugin, ctx: FunctionContext, kernel: CallableType) -> set[int]:
    """The chip count rule of :func:`visa.context.check_argument_chips` on each argument's type; the positions
    (after the Context) already reported — here, or at the parameter's annotation (:func:`device_call`)."""
    from visa.context import check_argument_chips

    expr = ctx.args[0][0] if ctx.args and ctx.args[0] else None
    node = expr.node if isinstance(expr, RefExpr) else None
    chips = device_chips(node, _module_of(ctx.api)) if isinstance(node, Decorator) else None
    if chips is None:
        return set()
    reported = set()
    for k, (want, got) in enumerate(zip(kernel.arg_types[1:], ctx.arg_types[2], strict=False)):
        for annotation, typ in ((True, want), (False, got)):
            chip = _chip_of(typ)
            if chip is None:
                continue
            try:
                check_argument_chips(f'argument {k + 3} to "launch"', chip, chips)
            except VisaError as err:
                if not annotation:  # a wrong annotation is reported at the parameter (device_call)
                    ctx.api.fail(err.describe(), ctx.args[2][k], code=error_code(err))
                reported.add(k)
                break
    return reported


_DECORATED: dict[str, dict[int, Decorator]] = {}


def _decorated(tree: Any) -> dict[int, Decorator]:
    """The module's decorated functions (top level and in classes), by the id of each decorator expression."""
    from mypy.nodes import ClassDef

    out: dict[int, Decorator] = {}

    def walk(defs: Sequence[Any]) -> None:
        for d in defs:
            if isinstance(d, Decorator):
                for dec in d.decorators:
                    out[id(dec)] = d
            elif isinstance(d, ClassDef):
                walk(d.defs.body)

    walk(tree.defs)
    return out


def device_call(plugin: VisaPlugin, ctx: FunctionContext) -> Type:
    """``@device(chip=N)``: each parameter annotated with a device tensor must span the kernel's N chips (manual
    L1079), reported at the parameter (issue 27 item 9); :func:`launch` checks the arguments at the call."""
    from visa.context import check_argument_chips

    module = _module_of(ctx.api)
    tree = getattr(ctx.api, "tree", None)
    if tree is None:
        return ctx.default_return_type
    found = _DECORATED.get(module)
    if found is None or id(ctx.context) not in found:
        found = _DECORATED[module] = _decorated(tree)
    node = found.get(id(ctx.context))
    chips = device_chips(node, module) if node is not None else None
    typ = node.func.type if node is not None else None
    if chips is None or node is None or not isinstance(typ, CallableType):
        return ctx.default_return_type
    for arg, want in list(zip(node.func.arguments, typ.arg_types, strict=False))[1:]:
        chip = _chip_of(want)
        if chip is None:
            continue
        try:
            check_argument_chips(f"parameter {arg.variable.name} of {node.func.name}", chip, chips, "device")
        except VisaError as err:
            ctx.api.fail(err.describe(), arg, code=error_code(err))
    return ctx.default_return_type


def launch(plugin: VisaPlugin, ctx: FunctionContext) -> Type:
    """``launch(kernel, ctx, *args)``: each argument must have the type the kernel's parameter declares, so
    that a tensor of another layout is refused here as in a direct call (mypy's own message); an argument
    spanning another number of chips than the kernel's ``@device(chip=N)`` is refused as at run time
    (:func:`visa.context.check_argument_chips`; a parameter annotated so is refused at the annotation)."""
    from mypy.messages import format_type
    from mypy.subtypes import is_subtype

    kernel = get_proper_type(ctx.arg_types[0][0]) if ctx.arg_types and ctx.arg_types[0] else None
    if not isinstance(kernel, CallableType) or len(ctx.arg_types) < 3:
        return ctx.default_return_type
    params = kernel.arg_types[1:]
    if len(ctx.args[2]) != len(params) and not kernel.is_ellipsis_args:
        ctx.api.fail(f'"launch" gives {len(ctx.args[2])} argument(s) to a kernel that takes {len(params)} after '
                     "its Context", ctx.context, code=VISA)
        return ctx.default_return_type
    reported = _launch_chips(plugin, ctx, kernel)
    for k, (got, want) in enumerate(zip(ctx.arg_types[2], params, strict=False)):
        if k not in reported and not is_subtype(got, want):
            options = ctx.api.options
            ctx.api.fail(f'Argument {k + 3} to "launch" has incompatible type {format_type(got, options)}; '
                         f"expected {format_type(want, options)}", ctx.args[2][k], code=VISA)
    return ctx.default_return_type


FUNCTIONS: dict[str, Handler] = {
    "visa.context.launch": launch,
    "visa.context.device": device_call,
    "visa.mapping.axes.axes": axes_call,
    "visa.mapping.axes.skew": axes_call,
    **{T + name: constructor(memory) for memory, name in TYPE_NAMES.items()},
}


# -- gather and scatter (issue 13) ------------------------------------------------------------------------------
STAGED = "visa.tensors.indirect."


def _staged_parts(call: Call, expr: Expression | None, method: str
                  ) -> tuple[Mapping | None, dict[str, Mapping] | None, tuple[str, Type | None] | None]:
    """For ``table.view().gather(m["V"], ids)`` (or ``.scatter``) reached from ``expr``: V, the table's levels
    and (ids dtype name, ids type); Nones where the source does not show them."""
    made = root_of(expr, call.function())
    if not (isinstance(made, CallExpr) and isinstance(made.callee, MemberExpr) and made.callee.name == method
            and len(made.args) == 2):
        return None, None, None
    axis = call.expr_mapping(made.args[0])
    table = tensor_of(type_of(call.ctx.api, made.callee.expr))
    ids_t = type_of(call.ctx.api, made.args[1])
    ids_dtype = _ids_dtype(ids_t)
    return axis, table[1] if table else None, (ids_dtype.name, ids_t) if ids_dtype else None


def _ids_dtype(ids_t: Type | None) -> type[dt.Scalar] | None:
    p = get_proper_type(ids_t) if ids_t is not None else None
    return dtype_of(p.args[0]) if isinstance(p, Instance) and p.args else None


def _index_axes(ids_t: Type | None) -> tuple[str, ...] | None:
    found = tensor_of(ids_t)
    if found is None:
        return None
    from visa.tensors.handles import logical_axes

    kind = memory_of(ids_t)
    names = LEVELS[kind[0]] if kind else tuple(found[1])
    return tuple(logical_axes([found[1][n] for n in names if n in found[1]], None))


def _check_staged(call: Call, kind: str, axis: Mapping | None, table: dict[str, Mapping] | None,
                  ids: tuple[str, Type | None] | None, other_axes: frozenset[str] | None) -> None:
    """:func:`visa.engines.dma.indirect.check_indirect_types`, the part of the rules the types decide."""
    from visa.engines.dma.indirect import check_indirect_types

    if axis is None or table is None or ids is None:
        return
    ids_dtype, ids_t = ids
    index_axes = _index_axes(ids_t)
    if not ids_dtype:
        return
    levels = tuple(table.items())
    if index_axes is None:  # the dtype is known, the layout is not: check what does not need it
        call.run(lambda: check_indirect_types(kind, ids_dtype, axis, levels, ("?",), None, call.name))
        return
    call.run(lambda: check_indirect_types(kind, ids_dtype, axis, levels, index_axes, other_axes, call.name))


def indirect_stage(plugin: VisaPlugin, ctx: MethodContext) -> Type:
    """``view.gather(m["V"], ids)`` / ``view.scatter(m["V"], ids)``: the index type, V in the Element, the
    index axes new to the table."""
    method = _method(ctx)
    call = Call(plugin, ctx, method)
    recv = get_proper_type(ctx.type)
    table = tensor_of(recv)
    ids_t = call.arg_type(1)
    ids_dtype = _ids_dtype(ids_t)
    _check_staged(call, method, call.arg_mapping(0), table[1] if table else None,
                  (ids_dtype.name, ids_t) if ids_dtype else None, None)
    return ctx.default_return_type


def gather_move(plugin: VisaPlugin, ctx: MethodContext) -> Type:
    """``….gather(m["V"], ids).to_dm(Cluster, Slice, Element, …)`` / ``.to_hbm(Chip, Element, …)``: the
    destination names the index axes in place of V."""
    method = _method(ctx)
    call = Call(plugin, ctx, "gather." + method)
    axis, table, ids = _staged_parts(call, call.receiver(), "gather")
    dst = [call.arg_mapping(k) for k in ((0, 1, 2) if method == "to_dm" else (0, 1))]
    if table is not None and method == "to_dm":
        dst.append(table.get("Chip"))
    if all(mp is not None for mp in dst):
        other = frozenset().union(*(mp.axes for mp in dst if mp is not None))
        _check_staged(call, "gather", axis, table, ids, other)
    return ctx.default_return_type


def scatter_move(plugin: VisaPlugin, ctx: MethodContext) -> Type:
    """``src.to_hbm_view(dst.view().scatter(m["V"], ids), …)``: the source names the index axes in place of V."""
    method = _method(ctx)
    call = Call(plugin, ctx, method)
    axis, table, ids = _staged_parts(call, call.arg_expr(0), "scatter")
    src = tensor_of(get_proper_type(ctx.type))
    if src is not None:
        other = frozenset().union(*(mp.axes for mp in src[1].values()))
        _check_staged(call, "scatter", axis, table, ids, other)
    return ctx.default_return_type


METHODS.update({"gather": indirect_stage, "scatter": indirect_stage, "to_hbm_view": scatter_move,
                "to_dm_view": scatter_move})
for _name in ("gather", "scatter"):
    RECEIVERS[_name] = frozenset({T + "HbmTensorView", T + "DmTensorView"})
for _name in ("to_hbm_view", "to_dm_view"):
    RECEIVERS[_name] = frozenset({T + "HbmTensor", T + "DmTensor", T + "HbmTensorView", T + "DmTensorView"})
