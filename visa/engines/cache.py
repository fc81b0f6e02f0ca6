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
import sys
import types
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import numpy as np

from visa.fastpaths import FastPath
from visa.mapping import Mapping
from visa.mapping.core import HashedKey

__all__ = ["exact_key", "cached", "per_object", "plan_nbytes", "PlanBudget", "PlanStore", "PLANS", "PLAN_BYTES", "MISS"]

R = TypeVar("R")
O = TypeVar("O")

#: The bytes the engines' plan caches keep in all (:data:`PLANS`) beyond what the current launch uses: room for every
#: plan a SmolLM2 decode step uses (16 MB of arrays; issue 25: the prefill's plans, 35 MB and dead weight under the
#: decode steps, go as the decode steps' come, and the steps do not drop one another's).
PLAN_BYTES = 32 << 20


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
    key = (type(value), tuple([exact_key(getattr(value, name)) for name in kind]))
    if memo is not None:  # a frozen dataclass never changes: its key is kept on it (not a field: == ignores it),
        key = memo[_MEMO] = HashedKey(key)  # hashed once (equal to, and hashing like, the plain tuple)
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


def plan_nbytes(value: Any) -> int:
    """The bytes ``value`` holds (a plan: a dataclass, tuple, list or dict of arrays, mappings and numbers, walked
    a few levels deep): each array's memory once (its base's, or its own for a broadcast of something smaller)
    and each container's or object's own size (``sys.getsizeof``; not the numbers and strings in them, nor
    mappings or hardware tables, which are shared); what a plan cache weighs an entry by (:class:`PlanBudget`).
    The depth counts containers (an object's attributes are at its own depth).  Arrays an entry computes later (a
    ``cached_property`` of the entry itself) count from its first use after they exist (:meth:`PlanStore.get`)."""
    seen: set[int] = set()

    def walk(v: Any, depth: int) -> int:
        kind = _WALK_KINDS.get(type(v))
        if kind is None:  # (what a type is to the walk depends on the type alone: found once per type)
            kind = _WALK_KINDS[type(v)] = _walk_kind(type(v))
        if kind is _ARRAY:
            base = v
            while isinstance(base.base, np.ndarray):
                base = base.base
            if id(base) in seen:
                return 0
            seen.add(id(base))
            owned = base.nbytes if base.base is None else 0  # (a view of other memory: a buffer, a mapping)
            return min(owned, v.nbytes) if 0 in v.strides else owned
        if v is None or depth > _DEPTH or id(v) in seen or kind is _SKIP:
            return 0  # (a hardware profile is shared, not the plan's)
        seen.add(id(v))
        own = sys.getsizeof(v)
        if kind is _ITEMS:
            return own + sum(walk(x, depth + 1) for x in v if type(x) not in _NUMBERS)
        if kind is _VALUES:
            return own + sum(walk(x, depth + 1) for x in v.values() if type(x) not in _NUMBERS)
        own += sum(walk(getattr(v, name, None), depth + 1) for name in kind)
        fields = getattr(v, "__dict__", None)
        return own + (walk(fields, depth) if isinstance(fields, dict) else 0)  # (its attributes at its own depth)

    return walk(value, 0)


#: What :func:`plan_nbytes` does with a value of each type (:func:`_walk_kind`), found once per type.
_WALK_KINDS: dict[type, Any] = {}
_ARRAY, _SKIP, _ITEMS, _VALUES = object(), object(), object(), object()


def _walk_kind(t: type) -> Any:
    """:func:`plan_nbytes`'s treatment of a value of type ``t``: an array, not counted or walked (numbers,
    strings, types, functions, modules, mappings, hardware tables), a container of items, one of values, or an
    object (then the names of its class's ``__slots__`` to walk, and its ``__dict__``)."""
    if issubclass(t, np.ndarray):
        return _ARRAY
    if issubclass(t, _SHARED) or t.__module__.startswith("visa.hw"):
        return _SKIP
    if issubclass(t, tuple | list | set | frozenset):
        return _ITEMS
    if issubclass(t, dict):
        return _VALUES
    return tuple(getattr(t, "__slots__", ()))


#: What :func:`plan_nbytes` does not count or walk into: numbers, strings, types, functions, modules, mappings.
_DEPTH = 3  # (deep enough for every plan's arrays; a DMA plan's deeper objects hold none)
_NUMBERS = frozenset((int, float, bool, str, type(None)))  # (skipped without a call: a plan's long tuples of ints)
_SHARED = (str, bytes, int, float, bool, complex, type, types.FunctionType, types.BuiltinFunctionType,
           types.ModuleType, Mapping)


class PlanBudget:
    """Every plan cache's entries (:func:`cached`, and stores made by :meth:`store`) in one least-recently-used
    order, bounded by the bytes of their arrays (:func:`plan_nbytes`): past :attr:`limit` the entry used longest
    ago goes first, whichever cache holds it — but never one used since the current launch began
    (:meth:`new_launch`): a launch whose own plans take more than the limit keeps them all (no plan is made twice
    in a launch), and drops the earlier launches' instead.

    A program that moves from one shape of work to another (a model's prefill, then its decode steps: issue 25)
    keeps the plans it uses now rather than the first ones made; a cache's own entry count bounds it as before,
    its oldest entry going.  Pure bookkeeping: an entry dropped is planned again when asked, the same plan.

    >>> budget = PlanBudget(limit=1000)
    >>> a, b = budget.store(8), budget.store(8)
    >>> a.put("x", np.zeros(600, np.uint8)); b.put("y", np.zeros(300, np.uint8))
    >>> budget.new_launch()
    >>> _ = a.get("x")                        # x used in this launch
    >>> b.put("z", np.zeros(300, np.uint8))   # 1,200 bytes: y, used in an earlier launch only, goes
    >>> (a.get("x") is MISS, b.get("y") is MISS, budget.total)
    (False, True, 900)
    >>> a.put("w", np.zeros(600, np.uint8))   # 1,500 bytes, every one used in this launch: all stay
    >>> budget.total
    1500
    """

    __slots__ = ("limit", "total", "_order", "_launch", "hits", "misses")

    def __init__(self, limit: int = PLAN_BYTES) -> None:
        self.limit = limit
        self.total = 0
        #: every entry, least recently used first (keyed by the entry itself: no plan key is hashed again)
        self._order: OrderedDict[_Entry, None] = OrderedDict()
        self._launch = 0
        self.hits = 0
        self.misses = 0

    def store(self, limit: int) -> PlanStore:
        """A new cache of at most ``limit`` entries under this budget."""
        return PlanStore(self, limit)

    def new_launch(self) -> None:
        """A launch begins (:func:`visa.context.launch`): the entries used from now on stay until it ends."""
        self._launch += 1

    def _touch(self, entry: _Entry, value: Any) -> None:
        entry.launch = self._launch
        self._order.move_to_end(entry)
        attrs = _attributes(value)
        if attrs != entry.attrs:  # (it computed a cached_property since weighed)
            entry.attrs = attrs
            nbytes = plan_nbytes(value)
            self.total += nbytes - entry.nbytes
            entry.nbytes = nbytes
            self._shrink()

    def _add(self, store: PlanStore, key: Hashable, value: Any) -> _Entry:
        nbytes = plan_nbytes(value)
        entry = _Entry(store, key, nbytes, self._launch, _attributes(value))
        self._order[entry] = None
        self.total += nbytes
        return entry

    def _shrink(self) -> None:
        while self.total > self.limit:
            old = next(iter(self._order))
            if old.launch == self._launch:
                break  # (every entry after it was used later: this launch's working set stays whole)
            old.store._drop(old.key)

    def _forget(self, entry: _Entry) -> None:
        del self._order[entry]
        self.total -= entry.nbytes

    def clear(self) -> None:
        """Drop every entry of every cache under this budget."""
        for entry in list(self._order):
            entry.store._drop(entry.key)


class _Entry:
    """One plan cache entry's place in its budget: its store and key, its bytes, the launch that used it last,
    and how many attributes it had when weighed (-1: none).  Hashed by identity: moving it to the end of the
    budget's order hashes no plan key."""

    __slots__ = ("store", "key", "nbytes", "launch", "attrs")

    def __init__(self, store: PlanStore, key: Hashable, nbytes: int, launch: int, attrs: int) -> None:
        self.store, self.key, self.nbytes, self.launch, self.attrs = store, key, nbytes, launch, attrs


def _attributes(value: Any) -> int:
    """How many attributes ``value`` holds in its ``__dict__`` (-1: it has none): what tells the budget an entry
    computed a ``cached_property`` since it was weighed.  A :func:`per_object` entry, ``(weak reference,
    value)``, is read through to its value (a review found a cached ``groups`` array escaping the budget)."""
    if type(value) is tuple and len(value) == 2 and type(value[0]) is weakref.ref:
        value = value[1]
    attrs = getattr(value, "__dict__", None)
    return -1 if attrs is None else len(attrs)


class PlanStore:
    """One plan cache under a :class:`PlanBudget`: at most :attr:`limit` entries, least recently used out first."""

    __slots__ = ("budget", "limit", "_entries", "__weakref__")

    def __init__(self, budget: PlanBudget, limit: int) -> None:
        self.budget, self.limit = budget, limit
        #: key → (value, its place in the budget)
        self._entries: OrderedDict[Hashable, tuple[Any, _Entry]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable) -> Any:
        """The entry of ``key`` (now the most recently used), or :data:`MISS`."""
        entries = self._entries
        hit = entries.get(key)
        budget = self.budget
        if hit is None:
            budget.misses += 1
            return MISS
        entries.move_to_end(key)
        value = hit[0]
        budget._touch(hit[1], value)
        budget.hits += 1
        return value

    def put(self, key: Hashable, value: Any) -> None:
        """Keep ``value`` under ``key`` (weighed by :func:`plan_nbytes`), dropping what the limits ask."""
        if key in self._entries:
            self._drop(key)
        while len(self._entries) >= max(self.limit, 1):
            self._drop(next(iter(self._entries)))
        entry = self.budget._add(self, key, value)
        self._entries[key] = (value, entry)
        self.budget._shrink()

    def _drop(self, key: Hashable) -> None:
        self.budget._forget(self._entries.pop(key)[1])

    def clear(self) -> None:
        """Drop every entry."""
        for key in list(self._entries):
            self._drop(key)


#: What :meth:`PlanStore.get` returns for a key it does not hold (a plan may be None).
MISS: Any = object()

#: The budget of the engines' plan caches (:class:`PlanBudget`; ``PLANS.limit`` may be changed at run time).
PLANS = PlanBudget()


def cached(limit: int = 256, paths: tuple[FastPath, ...] = ()) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Memoise a pure function on :func:`exact_key` of its positional arguments (at most ``limit`` entries, and
    under the bytes of :data:`PLANS`, least recently used out first): two equivalent mappings (L1017–1028) may
    plan differently, so they never share an entry.  A function that takes fast ``paths`` (:mod:`visa.fastpaths`)
    is keyed on whether each is on too (a plan made by a fast path is never handed out with the path off)."""

    def wrap(fn: Callable[..., R]) -> Callable[..., R]:
        store = PLANS.store(limit)

        @functools.wraps(fn)
        def inner(*args: Any) -> R:
            key = (*map(exact_key, args), *[p.on for p in paths]) if paths else tuple(map(exact_key, args))
            hit = store.get(key)
            if hit is not MISS:
                out: R = hit
                return out
            made = fn(*args)
            store.put(key, made)
            return made

        inner.cache_clear = store.clear  # type: ignore[attr-defined]
        return inner

    return wrap


def per_object(limit: int = 256) -> Callable[[Callable[[O], R]], Callable[[O], R]]:
    """Memoise ``fn(obj)`` on the identity of ``obj`` (a plan, say a configuration a cached plan holds: what a
    fast path derives from it once), under the bytes of :data:`PLANS` like :func:`cached` and at most ``limit``
    entries, least recently used out first.  The entry holds ``obj`` weakly: it never keeps a plan alive that its
    own cache dropped (issue 25: ``fast_inter``'s and ``fast_parallel_copy``'s per-configuration caches held up to
    256 configurations and their index arrays outside the budget), and an entry whose object died is found stale
    (its weak reference dead or another object's) and made again.  ``obj`` must accept weak references."""

    def wrap(fn: Callable[[O], R]) -> Callable[[O], R]:
        store = PLANS.store(limit)

        @functools.wraps(fn)
        def inner(obj: O) -> R:
            key = id(obj)
            hit = store.get(key)
            if hit is not MISS and hit[0]() is obj:
                out: R = hit[1]
                return out
            made = fn(obj)
            store.put(key, (weakref.ref(obj), made))
            return made

        inner.cache_clear = store.clear  # type: ignore[attr-defined]
        inner.store = store  # type: ignore[attr-defined]
        return inner

    return wrap
