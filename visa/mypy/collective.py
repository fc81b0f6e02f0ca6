"""The plugin's hooks for the collectives (manual L7382–7610): ``chip_shuffle``,
``cluster_swap``, ``asymmetric_chip_slice`` and ``asymmetric_cluster_slice``.

Where the permutation, the indices and the mappings are literals, the same rule functions the runtime calls
(:func:`visa.engines.dma.shuffle.check_permutation`, :func:`~visa.engines.dma.shuffle.check_cluster_swap`,
:func:`visa.engines.parallel_copy.plan`) report their refusals at the line of the call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mypy.constant_fold import constant_fold_expr
from mypy.nodes import CallExpr, ListExpr, MemberExpr, TupleExpr
from mypy.plugin import MethodContext
from mypy.types import Instance, Type, get_proper_type

from visa.engines import parallel_copy as pcopy
from visa.engines.common import axes_text
from visa.engines.dma import shuffle
from visa.mypy.typeargs import T, dtype_of, mapping_of, memory_of

if TYPE_CHECKING:
    from visa.mypy import VisaPlugin

__all__ = ["chip_shuffle", "cluster_swap", "asymmetric_slice", "staged_move", "METHODS", "RECEIVERS"]

_VIEWS = frozenset({T + "HbmTensorView", T + "DmTensorView", T + "TensorView"})
SHUFFLED_ = "visa.tensors.collective.ShuffledSource"


def _literal_list(call: Any, i: int) -> list[object] | None:
    """Argument ``i`` when the source spells it as a list or tuple of integer constants."""
    expr = call.arg_expr(i)
    if not isinstance(expr, ListExpr | TupleExpr):
        return None
    out: list[object] = []
    for item in expr.items:
        got = constant_fold_expr(item, call.module)
        if not isinstance(got, int):
            return None
        out.append(got)
    return out


def _receiver(ctx: MethodContext) -> Instance | None:
    recv = get_proper_type(ctx.type)
    return recv if isinstance(recv, Instance) else None


def _view(ctx: MethodContext) -> Instance | None:
    """The view a shuffle is staged on: the receiver, or the view inside a staged source."""
    recv = _receiver(ctx)
    if recv is not None and recv.type.fullname == SHUFFLED_:
        inner = get_proper_type(recv.args[0]) if recv.args else None
        return inner if isinstance(inner, Instance) else None
    return recv


def chip_shuffle(plugin: VisaPlugin, ctx: MethodContext) -> Type:
    """``view.chip_shuffle(perm)``: the permutation's rules against the view's Chip (or the kernel's chips)."""
    from visa.mypy.hooks import Call

    call = Call(plugin, ctx, "chip_shuffle")
    perm = _literal_list(call, 0)
    recv = _view(ctx)
    chip = mapping_of(recv.args[1]) if recv is not None and len(recv.args) > 1 else None
    chips = chip.size if chip is not None else call.num_chips()
    if perm is not None and chips is not None:
        call.run(lambda: shuffle.check_permutation(perm, chips, mapping=repr(chip) if chip is not None else None,
                                                   axis=axes_text(chip)))
    return ctx.default_return_type


def cluster_swap(plugin: VisaPlugin, ctx: MethodContext) -> Type:
    """``view.cluster_swap()``: a DM view whose Cluster spans the chip's clusters."""
    from visa.mypy.hooks import Call

    call = Call(plugin, ctx, "cluster_swap")
    recv = _view(ctx)
    if recv is None:
        return ctx.default_return_type
    if recv.type.fullname == T + "HbmTensorView":
        call.run(lambda: shuffle.check_cluster_swap(plugin.hw, 0, medium="hbm"))
    elif recv.type.fullname == T + "DmTensorView" and len(recv.args) > 2:
        cluster = mapping_of(recv.args[2])
        if cluster is not None:
            call.run(lambda: shuffle.check_cluster_swap(plugin.hw, cluster.size, medium="dm",
                                                        mapping=repr(cluster), axis=axes_text(cluster),
                                                        held=int(cluster.validity().sum())))
    return ctx.default_return_type


def asymmetric_slice(which: str) -> Any:
    """``dm.asymmetric_{chip,cluster}_slice(digit, ctx.sub, indices, addr)``: :func:`visa.engines.parallel_copy.plan`
    and the result type ``DmTensor[D, Chip, Cluster, Slice, <Element without the digit>]``."""

    def hook(plugin: VisaPlugin, ctx: MethodContext) -> Type:
        from visa.mypy.hooks import Call, static_type

        call = Call(plugin, ctx, f"asymmetric_{which}_slice")
        recv = _receiver(ctx)
        if recv is None or len(recv.args) != 5:
            return ctx.default_return_type
        tu = call.arg_expr(1)
        if isinstance(tu, MemberExpr) and tu.name in ("main", "sub"):
            if not call.run(lambda: pcopy.check_context(tu.name, f"asymmetric_{which}_slice")):
                return ctx.default_return_type
        dtype = dtype_of(recv.args[0])
        levels = {k: mapping_of(a) for k, a in zip(("Chip", "Cluster", "Slice", "Element"), recv.args[1:],
                                                      strict=True)}
        digit = call.arg_mapping(0)
        indices = _literal_list(call, 2)
        if dtype is None or digit is None or indices is None or any(v is None for v in levels.values()):
            return ctx.default_return_type
        known = {k: v for k, v in levels.items() if v is not None}
        result: list[Any] = []

        def rule() -> None:
            result.append(pcopy.plan(plugin.hw, dtype, known, digit, indices, which))

        if not call.run(rule) or not result:
            return ctx.default_return_type
        got = call.instance(T + "DmTensor", [*recv.args[:4], static_type(plugin, result[0].out)])
        return got

    return hook


def staged_move(plugin: VisaPlugin, ctx: MethodContext) -> Type:
    """``view.chip_shuffle(p).to_dm(Cluster, Slice, Element, ctx.tdma, addr)`` and ``.to_hbm(Chip, Element, ...)``:
    the DMA's rules (:func:`visa.mypy.rules.dma_move`, as for a plain move of the view) and the exact result
    type.  The shuffle changes which chip's bytes are read, not the layouts, so the rules are the plain move's."""
    from visa.memory.layout import LEVELS, TYPE_NAMES
    from visa.mypy import rules
    from visa.mypy.hooks import Call, _dma_stream, _method

    method = _method(ctx)
    call = Call(plugin, ctx, method)
    recv = _receiver(ctx)
    view = get_proper_type(recv.args[0]) if recv is not None and recv.args else None
    kind = memory_of(view)
    if not isinstance(view, Instance) or kind is None or method not in ("to_dm", "to_hbm"):
        return ctx.default_return_type
    src_memory = kind[0]
    names = LEVELS[src_memory]
    if len(view.args) != 1 + len(names):
        return ctx.default_return_type
    dst = method.removeprefix("to_")
    sources: list[int | None] = [None, 0, 1, 2] if dst == "dm" else [0, 1]
    addr_i = 4 if dst == "dm" else 3
    types = [view.args[1] if k is None else call.mapping_type(k) for k in sources]
    out = call.instance(T + TYPE_NAMES[dst], [view.args[0], *types])
    d = dtype_of(view.args[0])
    src_levels = {n: mapping_of(a) for n, a in zip(names, view.args[1:], strict=True)}
    dst_levels = {n: src_levels.get("Chip") if k is None else call.arg_mapping(k)
                  for n, k in zip(LEVELS[dst], sources, strict=True)}
    if d is None or any(v is None for v in [*src_levels.values(), *dst_levels.values()]):
        return out
    src_known = {k: v for k, v in src_levels.items() if v is not None}
    dst_known = {k: v for k, v in dst_levels.items() if v is not None}
    address = call.arg_int(addr_i)
    stream = _dma_stream(call)
    inner = call.receiver()  # the view under the staged shuffles: where the source was made, when shown
    while isinstance(inner, CallExpr) and isinstance(inner.callee, MemberExpr) and \
            inner.callee.name in ("chip_shuffle", "cluster_swap"):
        inner = inner.callee.expr
    source = call.origin(inner)
    if not call.run(lambda: rules.dma_move(plugin.hw, d, src_memory, src_known, dst, dst_known, address,
                                           call.num_chips(), source, stream)):
        return ctx.default_return_type
    return out


METHODS = {"chip_shuffle": chip_shuffle, "cluster_swap": cluster_swap,
           "asymmetric_chip_slice": asymmetric_slice("chip"),
           "asymmetric_cluster_slice": asymmetric_slice("cluster")}
RECEIVERS = {"chip_shuffle": _VIEWS | {SHUFFLED_}, "cluster_swap": _VIEWS | {SHUFFLED_},
             "asymmetric_chip_slice": frozenset({T + "DmTensor"}),
             "asymmetric_cluster_slice": frozenset({T + "DmTensor"})}

SHUFFLED = SHUFFLED_


def extend(methods: dict[str, Any], receivers: dict[str, frozenset[str]]) -> None:
    """Add this module's hooks to the plugin's dispatch tables (:data:`visa.mypy.hooks.METHODS`): its own
    methods, and ``to_dm``/``to_hbm`` on a staged source (the plain moves keep their hook)."""
    methods.update(METHODS)
    receivers.update(RECEIVERS)
    for name in ("to_dm", "to_hbm"):
        plain = methods[name]

        def hook(plugin: VisaPlugin, ctx: MethodContext, plain: Any = plain) -> Type:
            recv = _receiver(ctx)
            if recv is not None and recv.type.fullname == SHUFFLED:
                return staged_move(plugin, ctx)
            result: Type = plain(plugin, ctx)
            return result

        methods[name] = hook
        receivers[name] = receivers[name] | {SHUFFLED}
