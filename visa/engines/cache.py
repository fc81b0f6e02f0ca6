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

from visa.fastpaths import FastPath
from visa.mapping import Mapping

__all__ = ["exact_key", "cached"]

R = TypeVar("R")


def exact_key(value: Any) -> Hashable:
    """A hashable key that tells apart anything built from mappings by the mappings' exact identity (not the
    manual's equivalence, L1017–1028)."""
    kind = _KINDS.get(type(value))
    if kind is None:
        kind = _KINDS[type(value)] = _kind(type(value))
    if kind is _PLAIN:
        if type(value) in _FROZEN_PLAIN:  # a hardware table: hashed once (its dataclass hash walks every field)
            hw_memo: dict[str, Any] = value.__dict__
            hashed: Hashable | None = hw_memo.get(_MEMO)
            if hashed is None:
                hashed = hw_memo[_MEMO] = _Hashed(value)
            return hashed
        plain: Hashable = value
        return plain
    if kind is _MAPPING:
        return ("M", value.key)
    if kind is _SEQUENCE:
        return tuple(exact_key(v) for v in value)
    memo = getattr(value, "__dict__", None) if type(value) in _FROZEN else None
    if memo is not None:
        got = memo.get(_MEMO)
        if got is not None:
            key: Hashable = got
            return key
    key = (type(value), tuple(exact_key(getattr(value, name)) for name in kind))
    if memo is not None:  # a frozen dataclass never changes: its key is kept on it (not a field: == ignores it)
        memo[_MEMO] = key
    return key


_MAPPING, _SEQUENCE, _PLAIN = ("mapping",), ("sequence",), ("plain",)
_KINDS: dict[type, tuple[str, ...]] = {}  # per type: how its values are keyed (a dataclass: its field names)
_FROZEN: set[type] = set()  # the frozen dataclasses among them (their keys are kept on the values)
_FROZEN_PLAIN: set[type] = set()  # hardware tables that are frozen dataclasses (a hashed wrapper kept on them)
_MEMO = "_visa_exact_key"


def _kind(cls: type) -> tuple[str, ...]:
    """How :func:`exact_key` keys the values of ``cls`` (decided once per type; the order of the tests is the
    rule: mappings, sequences, then classes and hardware tables as they are, then dataclasses field by field)."""
    if issubclass(cls, Mapping):
        return _MAPPING
    if issubclass(cls, tuple | list):
        return _SEQUENCE
    if issubclass(cls, type) or cls.__module__.startswith("visa.hw"):
        params = getattr(cls, "__dataclass_params__", None)
        if params is not None and params.frozen and "__dict__" in dir(cls):
            _FROZEN_PLAIN.add(cls)
        return _PLAIN  # dtype classes, hardware profiles and their tables: hashable, no mappings
    if dataclasses.is_dataclass(cls):
        params = getattr(cls, "__dataclass_params__", None)
        if params is not None and params.frozen:
            _FROZEN.add(cls)
        return tuple(f.name for f in dataclasses.fields(cls))
    return _PLAIN


class _Hashed:
    """A hashable value keyed by equality, its hash computed once."""

    __slots__ = ("value", "_hash")

    def __init__(self, value: Hashable) -> None:
        self.value = value
        self._hash = hash(value)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Hashed) and (other.value is self.value or other.value == self.value)


def cached(limit: int = 256, paths: tuple[FastPath, ...] = ()) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Memoise a pure function on :func:`exact_key` of its positional arguments (at most ``limit`` entries):
    two equivalent mappings (L1017–1028) may plan differently, so they never share an entry.  A function that
    takes fast ``paths`` (:mod:`visa.fastpaths`) is keyed on whether each is on too (a plan made by a fast path
    is never handed out with the path off)."""

    def wrap(fn: Callable[..., R]) -> Callable[..., R]:
        store: dict[Hashable, R] = {}

        @functools.wraps(fn)
        def inner(*args: Any) -> R:
            key = tuple(exact_key(a) for a in args) + tuple(p.on for p in paths)
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
