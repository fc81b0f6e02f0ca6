"""Switching fast paths in tests through the registry (:mod:`visa.fastpaths`), never by patching private functions.

``reference`` (a fixture, tests/conftest.py) turns named fast paths off for the rest of a test: a test runs a
kernel with a path on, calls ``reference("fetch.repeat")``, runs it again on the reference and compares.
``needs(...)`` skips a test that checks a fast path's own structure (a broadcast stream, a pooled buffer) when the
environment turned that path off (``VISA_FASTPATHS=off``: the suite's reference run).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import TypeVar

import pytest

from visa import fastpaths

T = TypeVar("T")


def needs(*names: str) -> None:
    """Skip the calling test unless every named fast path is on."""
    off = [n for n in names if not fastpaths.get(n).on]
    if off:
        pytest.skip(f"fast path {off[0]} is off (VISA_FASTPATHS): this test checks its structure")


@pytest.fixture
def reference() -> Iterator[Callable[..., None]]:
    """``reference(*names)`` turns those fast paths (every one when none is named) off until the test ends."""
    with ExitStack() as stack:
        yield lambda *names: stack.enter_context(fastpaths.disabled(*names))


def skip_unless(*names: str) -> pytest.MarkDecorator:
    """A mark skipping a test that checks these fast paths' own structure when the environment turned one off."""
    off = [n for n in names if not fastpaths.get(n).on]
    return pytest.mark.skipif(bool(off), reason=f"fast path {off[0] if off else ''} is off (VISA_FASTPATHS)")


def alone_and_without(name: str, run: Callable[[], T]) -> tuple[T, T]:
    """``run()`` with the fast path ``name`` alone on, then with every path but it: what a test compares."""
    with fastpaths.only(name):
        alone = run()
    with fastpaths.disabled(name):
        without = run()
    return alone, without
