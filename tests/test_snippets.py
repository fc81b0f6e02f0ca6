"""``visa explain``'s snippets (:mod:`visa.snippets`): each failing program raises exactly its diagnostic's code,
and the fixed one runs (issue 29, item 7)."""

from __future__ import annotations

import importlib.util

import pytest

from visa.diagnostic_codes import CODES
from visa.errors import VisaError
from visa.snippets import SNIPPETS


def _run(source: str) -> None:
    exec(compile(source, "<snippet>", "exec"), {"__name__": "__snippet__"})  # noqa: S102 - our own snippet


@pytest.mark.parametrize("key", sorted(SNIPPETS))
def test_the_failing_snippet_raises_its_code_and_the_fixed_one_runs(key: str) -> None:
    snippet = SNIPPETS[key]
    assert snippet.failing != snippet.fixed
    if "visa.models" in snippet.failing and importlib.util.find_spec("tokenizers") is None:
        pytest.skip("the models extra is not installed: pip install 'tcp-visa[models]'")
    with pytest.raises(VisaError) as err:
        _run(snippet.failing)
    assert err.value.code == CODES[key]
    _run(snippet.fixed)


def test_the_error_catalogue_shows_every_snippet_under_its_code() -> None:
    """docs/errors.md links each code that has a snippet to its failing program and the fix (a diff)."""
    from visa.catalogue import catalogue, scan

    page = catalogue(scan(), CODES)
    for key in SNIPPETS:
        code = CODES[key]
        section = page.split(f'<a id="{code}-example"></a>', 1)[1].split("<a id=", 1)[0]
        assert f"([example](#{code}-example))" in page
        assert "```python" in section and "```diff" in section and ("\n-" in section or "\n+" in section)


def test_no_two_snippet_modules_write_the_same_site() -> None:
    """Each module of ``visa.snippets`` owns its sites: a key in two modules would silently keep only one."""
    import importlib
    import pkgutil

    import visa.snippets as package
    from visa.snippets.base import Snippet

    owner: dict[str, str] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"visa.snippets.{info.name}")
        for name, value in vars(module).items():
            if name.isupper() and isinstance(value, dict) and value and all(
                    isinstance(v, Snippet) for v in value.values()):
                for key in value:
                    assert owner.setdefault(key, info.name) == info.name, f"{key!r}: {owner[key]} and {info.name}"
    assert set(owner) == set(SNIPPETS)


def test_every_code_has_a_failing_program_or_says_why_not() -> None:
    """Issue 29 item 7: each current code has a snippet at one of its sites, or each of its sites says why a
    program cannot show it (visa.snippets.without); no reason is kept for a site that no longer exists."""
    from visa.catalogue import explain
    from visa.snippets.without import NOT_YET, WITHOUT_SNIPPET

    by_code: dict[str, list[str]] = {}
    for key, code in CODES.items():
        by_code.setdefault(code, []).append(key)
    missing = [code for code, keys in by_code.items()
               if not any(k in SNIPPETS for k in keys) and not all(k in WITHOUT_SNIPPET for k in keys)]
    # the codes still owed a program are named (NOT_YET); the list only shrinks: a snippet removes its entry
    assert sorted(missing) == sorted(CODES[k] for k in NOT_YET)
    assert sorted(k for k in (*WITHOUT_SNIPPET, *NOT_YET) if k not in CODES) == []
    assert not set(WITHOUT_SNIPPET) & set(SNIPPETS) and not NOT_YET & (set(SNIPPETS) | set(WITHOUT_SNIPPET))
    key = "command.run VisaError: no --grid given"
    text = explain(CODES[key])
    assert text is not None and "example: none." in text and "visa tune kernel.py:gemm --grid" in text
