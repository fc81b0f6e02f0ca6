"""The registry of fast paths: every faster way to compute what a reference ``execute`` computes, by name (the
reference mode).

Each engine's reference ``execute`` follows the manual; a faster way to compute the same bytes, cycles and
schedule is a *fast path*, registered here under a dotted name (``"fetch.periodic-window"``) by the module that
owns it.  Every fast path can be switched off, alone or all together, and the suite's differential fuzzer
checks that nothing a kernel can observe changes when it is:

- ``VISA_FASTPATHS=off`` in the environment: every fast path off (``on``, or unset, is the default: all on);
  ``VISA_FASTPATHS=-fetch.periodic-window,-dma.words``: those off, the rest on.
- ``with visa.fastpaths.disabled():`` (all) or ``disabled("fetch.periodic-window", …)`` (some), and
  ``with visa.fastpaths.only("dma.words"):`` (that one on, every other off), for the span of a block.

An owner registers its path once, at import, and asks the handle on the hot path (an attribute read):

>>> WORDS = register("doctest.words", "copy DMA runs as machine words instead of bytes")
>>> with disabled("doctest.words"):
...     WORDS.on
False
>>> with disabled():
...     WORDS.on
False
>>> "doctest.words" in names()
True

This module is at the bottom of the package (every layer may register a path): it imports nothing of visa's
but the errors.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

from visa.errors import VisaError

__all__ = ["FastPath", "register", "names", "get", "disabled", "only", "describe", "check_environment", "ENV"]

#: The environment variable read when a path is registered (``off``, ``on``, or ``-name,-name``).
ENV = "VISA_FASTPATHS"


class FastPath:
    """One named fast path: ``on`` says whether its owner may take it now.

    ``name`` is dotted, the owning engine or memory first (``"fetch.periodic-window"``); ``doc`` says in one
    line what it computes faster and what reference it stands for.
    """

    __slots__ = ("name", "doc", "module", "_off")

    def __init__(self, name: str, doc: str, module: str) -> None:
        self.name = name
        self.doc = doc
        self.module = module
        self._off = 0  # how many enclosing switches turn it off (0: on)

    @property
    def on(self) -> bool:
        """Whether the owner may take this path now."""
        return self._off == 0

    def __repr__(self) -> str:
        return f"FastPath({self.name!r}, on={self.on})"


_REGISTRY: dict[str, FastPath] = {}
_LOCK = threading.Lock()


def _env_off(name: str) -> bool:
    """Whether the environment turns ``name`` off (read at registration, so a test may set it first)."""
    text = os.environ.get(ENV, "").strip()
    if text in ("", "on", "1", "all"):
        return False
    if text in ("off", "0", "none"):
        return True
    wanted = {part.strip() for part in text.split(",") if part.strip()}
    bad = sorted(part for part in wanted if not part.startswith("-"))
    if bad:
        raise VisaError(f"{ENV}={text!r}: {bad[0]!r} is neither 'off', 'on' nor '-name'",
                        call="visa.fastpaths", fix=f"write {ENV}=off, or {ENV}=-name,-name")
    return f"-{name}" in wanted


def register(name: str, doc: str) -> FastPath:
    """Register the fast path ``name`` (once, at the owner's import) and return its handle.

    Registering a name twice with the same owner returns the first handle (a module re-imported); a second
    owner for one name is refused.
    """
    import inspect

    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    module = caller.f_globals.get("__name__", "?") if caller is not None else "?"
    with _LOCK:
        old = _REGISTRY.get(name)
        if old is not None:
            if old.module != module:
                raise VisaError(f"fast path {name!r} is registered already, by {old.module}",
                                call="visa.fastpaths.register", fix="give the new path a name of its own")
            return old
        path = FastPath(name, doc, module)
        if _env_off(name):
            path._off = 1
        _REGISTRY[name] = path
        return path


def check_environment() -> None:
    """Refuse a ``-name`` in the environment that no registered path has (a typo would silently test
    nothing); ``Context.acquire`` calls it, once every owner is imported."""
    text = os.environ.get(ENV, "").strip()
    if text in ("", "on", "1", "all", "off", "0", "none"):
        return
    _env_off("")  # the form itself
    unknown = sorted(p[1:] for p in (s.strip() for s in text.split(",")) if p[1:] not in _REGISTRY)
    if unknown:
        raise VisaError(f"{ENV} names {unknown[0]!r}, which is no registered fast path",
                        call="visa.fastpaths", fix=f"one of: {', '.join(sorted(_REGISTRY))}")


def names() -> tuple[str, ...]:
    """Every registered fast path's name, sorted (``import visa`` imports every owner, so all are there)."""
    return tuple(sorted(_REGISTRY))


def get(name: str) -> FastPath:
    """The handle of ``name``; a name no owner registered is refused with the known names."""
    path = _REGISTRY.get(name)
    if path is None:
        raise VisaError(f"{name!r} is no registered fast path", call="visa.fastpaths",
                        fix=f"one of: {', '.join(sorted(_REGISTRY))}")
    return path


def describe() -> list[tuple[str, bool, str]]:
    """``(name, on, doc)`` of every path, sorted by name (``visa run --fastpaths`` and the docs print it)."""
    return [(n, _REGISTRY[n].on, _REGISTRY[n].doc) for n in names()]


@contextmanager
def _switch(paths: list[FastPath]) -> Iterator[None]:
    with _LOCK:
        for p in paths:
            p._off += 1
    try:
        yield
    finally:
        with _LOCK:
            for p in paths:
                p._off -= 1


def disabled(*which: str) -> AbstractContextManager[None]:
    """A context in which the named fast paths (every one when none is named) are off."""
    paths = [get(n) for n in which] if which else [get(n) for n in names()]
    return _switch(paths)


def only(*which: str) -> AbstractContextManager[None]:
    """A context in which only the named fast paths are on (those off by the environment stay off)."""
    keep = {get(n).name for n in which}
    return _switch([get(n) for n in names() if n not in keep])
