"""A small cache for plans keyed by the exact canonical forms of their mappings.

``Mapping.__eq__`` is the manual's equivalence (same positions, same indices), which holds between mappings
over axes of different sizes (``R # 8 / 4`` with R = 6 and with R = 7); a plan also depends on the axis sizes
(what is padding), so it is cached by the canonical forms, which include them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from visa.engines.common import StreamLayout
from visa.mapping import Mapping

__all__ = ["exact_key", "cached"]

R = TypeVar("R")


def exact_key(value: Any) -> Hashable:
    """A hashable key that distinguishes mappings by their canonical form (axis sizes included)."""
    if isinstance(value, Mapping):
        return ("M", value.canon)
    if isinstance(value, StreamLayout):
        return ("L", value.dtype, *(exact_key(value.level(n)) for n in ("Chip", "Cluster", "Slice", "Time",
                                                                          "Packet")))
    if isinstance(value, tuple):
        return tuple(exact_key(v) for v in value)
    if hasattr(value, "__dataclass_fields__"):
        return (type(value), tuple(exact_key(getattr(value, f)) for f in value.__dataclass_fields__))
    return value  # type: ignore[no-any-return]


def cached(limit: int = 128) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Memoise a pure plan function on :func:`exact_key` of its arguments."""
    def wrap(fn: Callable[..., R]) -> Callable[..., R]:
        store: dict[Hashable, R] = {}

        def inner(*args: Any) -> R:
            key = tuple(exact_key(a) for a in args)
            hit = store.get(key)
            if hit is None:
                if len(store) >= limit:
                    store.clear()
                hit = fn(*args)
                store[key] = hit
            return hit

        inner.__doc__ = fn.__doc__
        inner.__name__ = fn.__name__
        return inner

    return wrap
