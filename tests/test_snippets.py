"""``visa explain``'s snippets (:mod:`visa.snippets`): each failing program raises exactly its diagnostic's code,
and the fixed one runs (issue 29, item 7)."""

from __future__ import annotations

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
