"""Reading visa objects back from mypy types: a mapping type's mapping, a dtype, a tensor type's levels."""

from __future__ import annotations

from mypy.types import AnyType, CallableType, Instance, LiteralType, Type, TypeOfAny, TypeType, get_proper_type

from visa import dtypes as dt
from visa.errors import VisaError
from visa.mapping import Mapping
from visa.memory.layout import LEVELS, TYPE_NAMES
from visa.mypy.mappings import decode

__all__ = ["STATIC_M", "T", "S", "TENSOR_MEMORY", "VIEW_MEMORY", "DTYPES", "LEVELS", "STREAM", "mapping_of",
           "dtype_of", "dtype_instance", "tensor_of", "memory_of"]

#: The class of a mapping type (:mod:`visa.mapping.static`), the module of the tensor classes, of the stages.
STATIC_M = "visa.mapping.static.m"
T = "visa.tensors.handles."
S = "visa.stream.stages."
#: Tensor class → its memory; a tensor type's arguments are the dtype and the memory's LEVELS.
TENSOR_MEMORY = {T + name: memory for memory, name in TYPE_NAMES.items()}
#: Views have their tensor's type parameters.
VIEW_MEMORY = {T + "HbmTensorView": "hbm", T + "DmTensorView": "dm"}
DTYPES: dict[str, type[dt.Scalar]] = {f"visa.dtypes.{c.__name__}": c for c in dt.SCALARS.values()}
STREAM = ("Chip", "Cluster", "Slice", "Time", "Packet")


# -- types <-> python objects ------------------------------------------------------------------------------
def mapping_of(typ: Type | None) -> Mapping | None:
    """The mapping ``m[Literal["..."]]`` names; None for anything else (Any, a bare Mapping, a type variable)."""
    if typ is None:
        return None
    p = get_proper_type(typ)
    if isinstance(p, Instance) and p.type.fullname == STATIC_M and p.args:
        lit = get_proper_type(p.args[0])
        if isinstance(lit, LiteralType) and isinstance(lit.value, str):
            try:
                return decode(lit.value)
            except VisaError:
                return None
    return None


def dtype_of(typ: Type | None) -> type[dt.Scalar] | None:
    """The dtype class a type argument (``i32``) or a class-object argument (``type[i32]``) names."""
    if typ is None:
        return None
    p = get_proper_type(typ)
    if isinstance(p, CallableType) and p.is_type_obj():
        return DTYPES.get(p.type_object().fullname)
    if isinstance(p, TypeType):
        p = get_proper_type(p.item)
    if isinstance(p, Instance):
        return DTYPES.get(p.type.fullname)
    return None


def dtype_instance(typ: Type | None) -> Type:
    """The type argument for a dtype given as a class object (``i32`` → ``i32``)."""
    p = get_proper_type(typ) if typ is not None else None
    if isinstance(p, CallableType) and p.is_type_obj():
        return p.ret_type
    if isinstance(p, TypeType):
        return p.item
    return AnyType(TypeOfAny.special_form)


def memory_of(typ: Type | None) -> tuple[str, bool] | None:
    """(memory, is a view) of a tensor or view type."""
    p = get_proper_type(typ) if typ is not None else None
    if not isinstance(p, Instance):
        return None
    if p.type.fullname in TENSOR_MEMORY:
        return TENSOR_MEMORY[p.type.fullname], False
    if p.type.fullname in VIEW_MEMORY:
        return VIEW_MEMORY[p.type.fullname], True
    return None


def tensor_of(typ: Type | None) -> tuple[type[dt.Scalar], dict[str, Mapping]] | None:
    """(dtype, levels) of a tensor (or view) type whose dtype and mappings are all known."""
    p = get_proper_type(typ) if typ is not None else None
    if not isinstance(p, Instance):
        return None
    memory = TENSOR_MEMORY.get(p.type.fullname) or VIEW_MEMORY.get(p.type.fullname)
    if memory is None or len(p.args) != 1 + len(LEVELS[memory]):
        return None
    d = dtype_of(p.args[0])
    levels = {n: mapping_of(a) for n, a in zip(LEVELS[memory], p.args[1:], strict=True)}
    if d is None or any(v is None for v in levels.values()):
        return None
    return d, {k: v for k, v in levels.items() if v is not None}
