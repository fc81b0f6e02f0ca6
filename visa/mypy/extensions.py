"""The plugin's hooks for the reference's newer surface (design API.md §8, issue 26): the static share of each
rule, reported at the call line with the runtime's message.

* ``view.chip_slice(digit, element, [..])`` / ``.cluster_slice`` (on a view or a staged shuffle): with literal
  indices and mappings, :func:`visa.engines.dma.slicing.plan_slice`;
* ``view.memset(value, ctx.sub)``: the value's type and range (:func:`visa.engines.memset.check_value`) and the
  context (:func:`visa.engines.memset.check_context`);
* ``HbmScalar.from_host(ctx, value, dtype, addr)``: a device scalar type and a literal value in its range
  (:func:`visa.tensors.scalar.check_scalar_value`);
* ``dm.to_spm(Pe, Element, ctx.tdma, addr)``: the SPM tensor's placement (4 KiB per PE) and its exact type;
* ``gather(...).sparse_prefix(n)``: a literal valid length is not negative.

The fetch lifts are stage methods (:data:`visa.mypy.rules.STAGES`); the multi-axis regions of gather/scatter go
through :func:`visa.engines.dma.indirect.check_indirect_types` as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mypy.constant_fold import constant_fold_expr
from mypy.nodes import MemberExpr, NameExpr, RefExpr
from mypy.plugin import MethodContext
from mypy.types import Instance, Type, get_proper_type

from visa.errors import AddressError
from visa.mypy.collective import SHUFFLED, _literal_list, _receiver
from visa.mypy.typeargs import T, dtype_of, mapping_of, memory_of

if TYPE_CHECKING:
    from visa.mypy import VisaPlugin

__all__ = ["METHODS", "RECEIVERS", "extend"]

_VIEWS = frozenset({T + "HbmTensorView", T + "DmTensorView", T + "TensorView"})
SCALAR = "visa.tensors.scalar.HbmScalar"
GATHER = "visa.tensors.indirect.GatherSource"


def _view_of(recv: Instance | None) -> Instance | None:
    if recv is not None and recv.type.fullname == SHUFFLED:
        inner = get_proper_type(recv.args[0]) if recv.args else None
        return inner if isinstance(inner, Instance) else None
    return recv


def staged_slice(which: str) -> Any:
    """``chip_slice`` / ``cluster_slice`` with literal indices: the slice's rules against the view's layout."""

    def hook(plugin: VisaPlugin, ctx: MethodContext) -> Type:
        from visa.engines.dma.slicing import plan_slice
        from visa.memory.layout import LEVELS
        from visa.mypy.hooks import Call

        call = Call(plugin, ctx, f"{which}_slice")
        view = _view_of(_receiver(ctx))
        kind = memory_of(view)
        if view is None or kind is None:
            return ctx.default_return_type
        names = LEVELS[kind[0]]
        if len(view.args) != 1 + len(names):
            return ctx.default_return_type
        d = dtype_of(view.args[0])
        levels = {n: mapping_of(a) for n, a in zip(names, view.args[1:], strict=True)}
        digit, element, indices = call.arg_mapping(0), call.arg_mapping(1), _literal_list(call, 2)
        recv = _receiver(ctx)
        if d is None or digit is None or element is None or indices is None or levels.get("Element") is None:
            return ctx.default_return_type
        if recv is not None and recv.type.fullname == SHUFFLED and _sliced_before(call.receiver()):
            return ctx.default_return_type  # (a slice after a slice: the layout is the staged one, checked at run time)
        unit = levels.get("Chip" if which == "chip" else "Cluster")
        units = unit.size if unit is not None else 0
        el = levels["Element"]
        assert el is not None
        call.run(lambda: plan_slice(plugin.hw, d, el, el, digit, element, indices, which, units, kind[0],
                                    call=f"{which}_slice"))
        return ctx.default_return_type

    return hook


def _sliced_before(expr: Any) -> bool:
    """Whether a staged source's chain (``view.chip_shuffle(p).chip_slice(...)...``) already holds a slice."""
    from mypy.nodes import CallExpr

    while isinstance(expr, CallExpr) and isinstance(expr.callee, MemberExpr):
        if expr.callee.name in ("chip_slice", "cluster_slice"):
            return True
        if expr.callee.name == "view":
            return False  # the chain starts at a view: shuffles and swaps only
        expr = expr.callee.expr
    return True  # a staged source held in a variable may hold a slice: unknown, left to run time


def memset(plugin: VisaPlugin, ctx: MethodContext) -> Type:
    """``view.memset(value, ctx.sub | ctx.tdma)``: the value (literal) fits the view's type, the context fits the
    view's memory."""
    from visa.engines import memset as engine
    from visa.mypy.hooks import Call

    call = Call(plugin, ctx, "memset")
    view = _receiver(ctx)
    kind = memory_of(view)
    d = dtype_of(view.args[0]) if view is not None and view.args else None
    expr = call.arg_expr(0)
    value = constant_fold_expr(expr, call.module) if expr is not None else None
    if d is not None and value is not None and not isinstance(value, str):
        call.run(lambda: engine.check_value(d, value, "memset"))
    tu = call.arg_expr(1)
    if kind is not None and isinstance(tu, MemberExpr) and tu.name in ("main", "sub", "tdma", "pdma"):
        call.run(lambda: engine.check_context(kind[0], tu.name, "memset"))
    return ctx.default_return_type


def scalar_from_host(plugin: VisaPlugin, ctx: MethodContext) -> Type:
    """``HbmScalar.from_host(ctx, value, dtype, addr)``: a device scalar type, and a literal value it holds."""
    from visa import dtypes as dt
    from visa.mypy.hooks import Call
    from visa.tensors.scalar import _device_dtype, check_scalar_value

    call = Call(plugin, ctx, "HbmScalar.from_host")
    dexpr = call.arg_expr(2)
    dtype: Any = None
    if isinstance(dexpr, RefExpr) and dexpr.fullname and dexpr.fullname.startswith("visa."):
        name = dexpr.fullname.rsplit(".", 1)[-1]
        dtype = dt.DEVICE_SCALARS.get(name)
        if dtype is None and name in dt.SCALARS:
            call.run(lambda: _device_dtype(dt.SCALARS[name], "HbmScalar.from_host"))
            return ctx.default_return_type
    vexpr = call.arg_expr(1)
    if dtype is not None and vexpr is not None:
        value = constant_fold_expr(vexpr, call.module)
        if isinstance(vexpr, NameExpr) and vexpr.fullname in ("builtins.True", "builtins.False"):
            value = vexpr.fullname == "builtins.True"
        if value is not None:
            call.run(lambda: check_scalar_value(dtype, value, "HbmScalar.from_host"))
    return ctx.default_return_type


def to_spm(plugin: VisaPlugin, ctx: MethodContext) -> Type:
    """``dm.to_spm(Pe, Element, ctx.tdma, addr)``: the SpmTensor's placement (Pe of 4, 4 KiB per PE) and type."""
    from visa.mypy import rules
    from visa.mypy.hooks import Call

    call = Call(plugin, ctx, "dm.to_spm")
    recv = _receiver(ctx)
    if recv is None or len(recv.args) != 5:
        return ctx.default_return_type
    d = dtype_of(recv.args[0])
    chip, cluster = mapping_of(recv.args[1]), mapping_of(recv.args[2])
    pe, element = call.arg_mapping(0), call.arg_mapping(1)
    out = call.instance("visa.tensors.spm.SpmTensor", [recv.args[0], recv.args[1], recv.args[2],
                                                       call.mapping_type(0), call.mapping_type(1)])
    if d is None or chip is None or cluster is None or pe is None or element is None:
        return out
    levels = {"Chip": chip, "Cluster": cluster, "Pe": pe, "Element": element}
    if not call.run(lambda: rules.placement(plugin.hw, "spm", d, levels, call.arg_int(3), call.num_chips(),
                                            call="dm.to_spm")):
        return ctx.default_return_type
    return out


def sparse_prefix(plugin: VisaPlugin, ctx: MethodContext) -> Type:
    """``gather(...).sparse_prefix(n)``: a literal valid length is not negative."""
    from visa.mypy.hooks import Call

    call = Call(plugin, ctx, "sparse_prefix")
    n = call.arg_int(0)
    if n is not None and n < 0:
        def refuse() -> None:
            raise AddressError(f"the valid length {n} is negative", call="sparse_prefix",
                               fix="pass a length in 0..the index count")

        call.run(refuse)
    return ctx.default_return_type


METHODS: dict[str, Any] = {"chip_slice": staged_slice("chip"), "cluster_slice": staged_slice("cluster"),
                           "memset": memset, "from_host": scalar_from_host, "to_spm": to_spm,
                           "sparse_prefix": sparse_prefix}
RECEIVERS: dict[str, frozenset[str]] = {
    "chip_slice": _VIEWS | {SHUFFLED}, "cluster_slice": _VIEWS | {SHUFFLED},
    "memset": _VIEWS, "from_host": frozenset({SCALAR}),
    "to_spm": frozenset({T + "DmTensor"}), "sparse_prefix": frozenset({GATHER}),
}


def extend(methods: dict[str, Any], receivers: dict[str, frozenset[str]]) -> None:
    """Add these hooks to the plugin's dispatch tables (:data:`visa.mypy.hooks.METHODS`)."""
    methods.update(METHODS)
    receivers.update(RECEIVERS)
