"""Memoising pure plan functions by the *exact* identity of their mapping arguments.

``Mapping.__eq__`` is the manual's equivalence of one mapping on its own (L1017–1028).  A plan depends on
more: on how its mappings combine (``[A, B] % 2`` and ``B = 2`` are equivalent alone but pair differently with
``[A, B] / 2``) and on the axis sizes (what is padding).  So plans and the index arrays derived from them are
cached on :attr:`visa.mapping.Mapping.key`, never on ``==``; ``functools.lru_cache`` must not be used on a
function that takes mappings.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from visa.mapping import Mapping

__all__ = ["exact_key", "cached"]

R = TypeVar("R")


def exact_key(value: Any) -> Hashable:
    """A hashable key that tells apart anything built from mappings by the mappings' exact identity (not the
    manual's equivalence, L1017–1028)."""
    if isinstance(value, Mapping):
        return ("M", value.key)
    if isinstance(value, tuple | list):
        return tuple(exact_key(v) for v in value)
    if isinstance(value, type) or type(value).__module__.startswith("visa.hw"):
        plain: Hashable = value  # dtype classes, hardware profiles and their tables: hashable, no mappings
        return plain
    if dataclasses.is_dataclass(value):
        return (type(value), tuple(exact_key(getattr(value, f.name)) for f in dataclasses.fields(value)))
    other: Hashable = value
    return other


def cached(limit: int = 256) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Memoise a pure function on :func:`exact_key` of its positional arguments (at most ``limit`` entries):
    two equivalent mappings (L1017–1028) may plan differently, so they never share an entry."""

    def wrap(fn: Callable[..., R]) -> Callable[..., R]:
        store: dict[Hashable, R] = {}

        @functools.wraps(fn)
        def inner(*args: Any) -> R:
            key = tuple(exact_key(a) for a in args)
            try:
                return store[key]
            except KeyError:
                pass
            if len(store) >= limit:
                store.clear()
            hit = fn(*args)
            store[key] = hit
            return hit

        inner.cache_clear = store.clear  # type: ignore[attr-defined]
        return inner

    return wrap
