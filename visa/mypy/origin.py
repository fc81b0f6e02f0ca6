"""Where a tensor or a view was made, when the source shows it: its base tensor's type and byte address, and the
view's Element and element offset.

A tensor's address is not in its type.  When the value comes (through local variables assigned once) from the
call that created it — ``x.to_dm(..., address=4096)``, ``s.commit(m["A"], 0)``, ``DmTensor(ctx, ..., 0)``,
``s.to_trf(..., TrfAddress.SecondHalf)`` — with the address written as a constant, the plugin knows it; a view
adds ``view()`` (offset 0) and ``tile(...)`` calls, whose offsets :func:`visa.memory.layout.tile_offset` (the
function ``TensorView.tile`` calls) computes.  Anything else (a parameter, a non-constant address) has no
origin, and the rules that need the address are left to run time.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from mypy.constant_fold import constant_fold_expr
from mypy.nodes import CallExpr, Expression, MemberExpr, NameExpr

from visa import dtypes as dt
from visa.errors import VisaError
from visa.mapping import Mapping
from visa.memory.layout import TYPE_NAMES, describe, tile_offset
from visa.mypy.chain import formal_arg, root_of, type_of
from visa.mypy.typeargs import memory_of, tensor_of

__all__ = ["Origin", "origin_of"]


@dataclass(frozen=True)
class Origin:
    """A tensor (``view`` False) or a view of one: the base tensor's memory, dtype, levels and byte address (the
    TRF's from its ``TrfAddress``), and the Element and element offset the value sees."""

    memory: str
    dtype: type[dt.Scalar]
    levels: dict[str, Mapping]
    address: int
    element: Mapping
    offset: int = 0
    view: bool = False
    trf_mode: str | None = None

    def describe(self) -> str:
        """``DeviceTensor.describe()`` of the base tensor: ``DmTensor[i32, m["1"], ...] @ 4096``."""
        return describe(self.memory, self.dtype, self.levels, self.address)

    def name(self) -> str:
        """How the runtime names the value: the tensor's description, or ``repr`` of the view."""
        if not self.view:
            return self.describe()
        cls = {"hbm": "HbmTensorView", "dm": "DmTensorView"}[self.memory]
        return f"{cls}({self.describe()}, {self.element!r} + {self.offset})"

    def bit_address(self) -> int:
        """Bit address of the value's element 0 in its unit (``element_bit_offset`` plus the view's offset)."""
        return self.address * 8 + self.offset * self.dtype.size_bits


#: Tensor-making calls whose ``address`` parameter holds the byte address of the tensor they return.
_MAKERS = frozenset({"to_dm", "to_hbm", "commit", "to_vrf", "from_addr"})


def origin_of(expr: Expression | None, call: Any) -> Origin | None:
    """The origin of the value ``expr`` holds, or None when the source does not show it.  ``call`` is the
    :class:`visa.mypy.hooks.Call` being checked (its function, module, checker and hardware profile)."""
    api, module, hw = call.ctx.api, call.module, call.plugin.hw
    expr = root_of(expr, call.function())
    if not isinstance(expr, CallExpr):
        return None
    callee = expr.callee
    name = callee.name if isinstance(callee, (MemberExpr, NameExpr)) else ""
    if isinstance(callee, MemberExpr) and name == "view" and not expr.args:
        base = origin_of(callee.expr, call)
        return replace(base, view=True) if base is not None and not base.view else None
    if isinstance(callee, MemberExpr) and name == "tile":
        return _tile(expr, callee, call)
    found = tensor_of(type_of(api, expr))
    kind = memory_of(type_of(api, expr))
    if found is None or kind is None or kind[1]:
        return None
    dtype, levels = found
    memory = kind[0]
    if memory == "trf" and name == "to_trf":
        arg = formal_arg(expr, "address", api)
        try:
            from visa.mypy.rules import static_value

            trf = static_value(arg, module) if arg is not None else None
        except Exception:  # noqa: BLE001 - not a constant: no origin
            return None
        if trf is None or not hasattr(trf, "offset_halves"):
            return None
        return Origin(memory, dtype, levels, trf.offset_halves * hw.trf.half_row_bytes, levels["Element"],
                      trf_mode=trf.name)
    if name not in _MAKERS and not (isinstance(callee, NameExpr) and name in TYPE_NAMES.values()):
        return None
    arg = formal_arg(expr, "address", api)
    address = constant_fold_expr(arg, module) if arg is not None else None
    if not isinstance(address, int) or isinstance(address, bool):
        return None
    return Origin(memory, dtype, levels, address, levels["Element"])


def _tile(expr: CallExpr, callee: MemberExpr, call: Any) -> Origin | None:
    """``view.tile(dim, size, tile_mapping, start)``: the view's origin moved by the tile's offset (the tile's
    Element spelled as the call writes it)."""
    api, module = call.ctx.api, call.module
    base = origin_of(callee.expr, call)
    if base is None or not base.view:
        return None
    found = [formal_arg(expr, n, api) for n in ("dim", "size", "tile_mapping", "start")]
    args = [a for a in found if a is not None]
    if len(args) != 4:
        return None
    dim, tile = (call.expr_mapping(args[k]) for k in (0, 2))
    size, start = (constant_fold_expr(args[k], module) for k in (1, 3))
    if dim is None or tile is None or not isinstance(size, int) or not isinstance(start, int):
        return None
    try:
        offset = tile_offset(base.element, dim, size, tile, start, "tile")
    except VisaError:
        return None  # the tile's own hook reports it
    return replace(base, element=tile, offset=base.offset + offset)
