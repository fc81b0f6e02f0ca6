"""The API reference lists every public stage method (issue 29, item 1).

The reference pages are mkdocstrings directives (``::: visa.FetchTensor``); a class's methods appear when they
have a docstring (``show_if_no_docstring: false``) and, for the ones it inherits (``commit``, ``cast``,
``vector_init``, the ``vector_*`` methods of the Vector Engine stages), when its directive sets
``inherited_members: true``.  So: every public stage class has such a directive, and every public method of it has
a docstring.  A misspelt stage method is refused with the nearest names.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np
import pytest

import visa
import visa.stream.vector as vector
from visa import AxisSet, CollectTensor, Context, i32
from visa.engines.common import StreamLayout
from visa.stream.stages import StreamTensor
from visa.testing import make_stream

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "reference"
DIRECTIVE = re.compile(r"^::: (?P<path>[\w.]+)\n(?P<options>(?:    .*\n)*)", re.M)


def _directives() -> dict[str, str]:
    out: dict[str, str] = {}
    for page in REFERENCE.glob("*.md"):
        for found in DIRECTIVE.finditer(page.read_text()):
            out[found.group("path").rsplit(".", 1)[-1]] = found.group("options")
    return out


def _stage_classes() -> dict[str, type]:
    names = {n for n in dir(visa) if not n.startswith("_")} | set(vector.__all__)
    out = {}
    for n in sorted(names):
        cls = getattr(visa, n, None) or getattr(vector, n, None)
        if isinstance(cls, type) and issubclass(cls, StreamTensor):
            out[n] = cls
    return out


def test_every_stage_class_is_in_the_reference_with_its_inherited_methods() -> None:
    directives = _directives()
    classes = _stage_classes()
    assert len(classes) >= 35  # the pipeline's stages and the Vector Engine's, single and paired
    missing = [n for n in classes if n not in directives]
    assert not missing, f"not in docs/reference: {missing}"
    no_inherited = [n for n in classes if "inherited_members: true" not in directives[n]]
    assert not no_inherited, f"listed without their inherited methods: {no_inherited}"


def test_every_public_stage_method_has_a_docstring_so_the_reference_shows_it() -> None:
    undocumented = []
    methods = set()
    for name, cls in _stage_classes().items():
        for attr, member in inspect.getmembers(cls):
            if attr.startswith("_") or not callable(member):
                continue
            methods.add(attr)
            if not inspect.getdoc(member):
                undocumented.append(f"{name}.{attr}")
    assert not undocumented, undocumented
    vector_methods = {m for m in methods if m.startswith("vector_")}
    assert len(vector_methods) >= 28 and {"commit", "cast", "transpose", "vector_init"} <= methods


def test_the_operator_enums_list_their_members() -> None:
    page = (REFERENCE / "vector.md").read_text()
    assert "::: visa.engines.vector.ops\n    options:\n      show_if_no_docstring: true" in page


@pytest.mark.parametrize(("typo", "hint"), [("vector_intt", ".vector_init()"), ("comit", ".commit()"),
                                            ("fetchh", ".fetch()")])
def test_a_misspelt_stage_method_says_did_you_mean(typo: str, hint: str) -> None:
    ax = AxisSet(A=8)
    lay = StreamLayout(i32, ax.m["1"], ax.m["1 # 2"], ax.m["1"], ax.m["1"], ax.m["A"])
    stream = make_stream(Context.acquire().main, CollectTensor, lay, np.arange(8, dtype=np.int32))
    with pytest.raises(AttributeError) as err:
        getattr(stream, typo)
    assert f"a CollectTensor has no method .{typo}(); did you mean" in str(err.value) and hint in str(err.value)
    assert getattr(stream, "no_such_thing", None) is None  # getattr with a default still works
