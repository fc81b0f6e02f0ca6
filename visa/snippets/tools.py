"""Snippets for the tools around kernels: the fast-path switches (:mod:`visa.fastpaths`, ``VISA_FASTPATHS``) and
the test helpers of :mod:`visa.testing` (a buffer's values under its level mappings, manual L1152–1161)."""

from __future__ import annotations

from visa.snippets.base import Snippet, module

__all__ = ["TOOLS"]

_ENV = ("import os\nfrom unittest import mock\n\nfrom visa import Context\n\n"
        "# as a shell's `VISA_FASTPATHS=... python kernel.py` would set it")
_FAST = "from visa import fastpaths"
_HELD = ("import numpy as np\nfrom visa import axes, i32, m\nfrom visa.testing import hold, read_held\n\n"
         "axes(A=4)")

#: site key → the failing and the fixed program.
TOOLS: dict[str, Snippet] = {
    "fastpaths._env_off VisaError: is neither 'off' 'on'": module(
        _ENV, 'with mock.patch.dict(os.environ, VISA_FASTPATHS="dma.words"):\n    ctx = Context.acquire()',
        'with mock.patch.dict(os.environ, VISA_FASTPATHS="-dma.words"):   # "-name" turns one path off\n'
        "    ctx = Context.acquire()"),
    "fastpaths.check_environment VisaError: names which is no": module(
        _ENV, 'with mock.patch.dict(os.environ, VISA_FASTPATHS="-dma.word"):\n    ctx = Context.acquire()',
        'with mock.patch.dict(os.environ, VISA_FASTPATHS="-dma.words"):\n    ctx = Context.acquire()'),
    "fastpaths.get VisaError: is no registered fast": module(
        _FAST, 'with fastpaths.disabled("dma.word"):\n    pass', 'with fastpaths.disabled("dma.words"):\n    pass'),
    "fastpaths.register VisaError: fast path is registered": module(
        _FAST, 'WORDS = fastpaths.register("dma.words", "my copy as machine words")   # the DMA engine\'s name',
        'WORDS = fastpaths.register("test.my-words", "my copy as machine words")'),
    "testing.hold LayoutError: array shape does not": module(
        _HELD, 'values, valid = hold(np.arange(3), i32, [m["A"]])   # A has 4 elements',
        'values, valid = hold(np.arange(4), i32, [m["A"]])'),
    "testing.read_held PoisonError: valid position s hold": module(
        _HELD, 'x = read_held(np.arange(4), np.array([True, True, False, True]), i32, [m["A"]])',
        'x = read_held(np.arange(4), np.ones(4, bool), i32, [m["A"]])'),
    "testing.read_held LayoutError: index es of the": module(
        _HELD, 'x = read_held(np.arange(2), np.ones(2, bool), i32, [m["A = 2"]], axes="A")   # A = 2, 3 held nowhere',
        'x = read_held(np.arange(2), np.ones(2, bool), i32, [m["A = 2"]], axes="A", allow_missing=True)'),
}
