"""Issue 16 item 4: a stable code per diagnostic, catalogued in docs/errors.md, in ``str(e)``, with followable
manual citations."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pytest

from visa import AxisSet
from visa.catalogue import catalogue, scan
from visa.diagnostic_codes import CODES, RETIRED
from visa.diagnostics import Site, site_key
from visa.errors import LayoutError, MappingSyntaxError, UnknownAxisError, VisaError
from visa.manual import cite, section

ROOT = Path(__file__).resolve().parent.parent
SITES = scan()
FIX = "run `python -m visa.catalogue --assign` and `python -m visa.catalogue --catalogue`"


def test_every_raise_site_has_a_code() -> None:
    missing = [f"{s.path.relative_to(ROOT)}:{s.line}: {s.key!r}" for s in SITES if s.key not in CODES]
    assert not missing, f"raise sites without a code ({FIX}):\n" + "\n".join(missing)
    assert len(SITES) > 250


def test_no_code_names_a_site_that_is_gone() -> None:
    keys = {s.key for s in SITES}
    stale = sorted(k for k in CODES if k not in keys)
    assert not stale, f"codes of removed sites (move them to RETIRED with {FIX}): {stale}"


def test_codes_are_unique_never_reused_and_in_their_class_family() -> None:
    assert len(set(CODES.values())) == len(CODES)
    assert not set(CODES.values()) & set(RETIRED.values())
    import visa.catalogue as D

    classes = D._error_classes()
    for site in SITES:
        code = CODES[site.key]
        assert re.fullmatch(r"V\d{4}", code)
        assert code[1] == str(classes[site.cls].code)[1], (site.key, code)


def test_a_key_names_one_file() -> None:
    """Two files with the same stem and function would share codes: the key must tell them apart."""
    files: dict[str, set[Path]] = {}
    for s in SITES:
        files.setdefault(s.key, set()).add(s.path)
    assert {k: v for k, v in files.items() if len(v) > 1} == {}


def test_the_committed_catalogue_is_current() -> None:
    assert (ROOT / "docs" / "errors.md").read_text() == catalogue(SITES, CODES) + "\n", FIX


def test_the_catalogue_gives_meaning_rule_and_fix() -> None:
    page = (ROOT / "docs" / "errors.md").read_text()
    for code in CODES.values():
        assert f'<a id="{code}"></a>{code}' in page
    with pytest.raises(MappingSyntaxError) as err:
        AxisSet(A=8).m["A / 3"]
    row = next(line for line in page.splitlines() if f'<a id="{err.value.code}">' in line)
    assert "`MappingSyntaxError`" in row and "divide" in row and "§Mapping Expressions" in row


def test_no_message_cites_the_design_notes() -> None:
    """A user has the manual, not the project's design notes."""
    assert [s.key for s in SITES if "API.md" in s.message + s.fix] == []


def test_an_error_carries_its_sites_code_in_str() -> None:
    ax = AxisSet(A=8)
    with pytest.raises(MappingSyntaxError) as err:
        ax.m["A / 3"]
    code = err.value.code
    assert [k for k, v in CODES.items() if v == code][0].startswith("syntax.")
    assert str(err.value).endswith(f" [{code}]") and code != MappingSyntaxError.code
    assert pickle.loads(pickle.dumps(err.value)).code == code
    assert f"[{code}]" not in err.value.describe()


def test_a_refusal_rebuilt_from_another_keeps_its_code() -> None:
    """The parser re-raises ``type(e)(...)`` with the mapping's text; the code is the original diagnostic's."""
    with pytest.raises(UnknownAxisError) as err:
        AxisSet(A=8).m["B"]
    assert err.value.code in CODES.values()


def test_a_refusal_caught_unread_parses_no_source(monkeypatch: pytest.MonkeyPatch) -> None:
    """The code is found when first read (issue 15: a plan that refuses a candidate and takes another never
    parses the engine's source for the refusal's code); read afterwards, it is the site's code."""
    import visa.diagnostics as D

    calls: list[tuple[str, int, str]] = []
    real = D.code_at
    monkeypatch.setattr(D, "code_at", lambda f, n, c: calls.append((f, n, c)) or real(f, n, c))
    try:
        AxisSet(A=8).m["A / 3"]
    except MappingSyntaxError as caught:
        err = caught
    assert calls == []
    code = err.code
    assert calls and [k for k, v in CODES.items() if v == code][0].startswith("syntax.")
    assert err.code == code and len(calls) == len({*calls})  # worked out once


def test_a_refusal_rebuilt_from_an_unread_one_keeps_its_code() -> None:
    """``raise type(e)(...)`` while ``e`` is handled: ``e``'s code was never read, the new one still gets it."""
    def rebuild() -> LayoutError:
        try:
            raise LayoutError("inner")  # a literal raise site outside visa: the class's code
        except LayoutError as inner:
            assert "code" not in inner.__dict__
            return LayoutError("outer")
    assert rebuild().code == LayoutError.code
    with pytest.raises(UnknownAxisError) as err:  # the parser's rebuild of an unread refusal
        AxisSet(A=8).m["B"]
    assert "code" not in err.value.__dict__ and err.value.code in CODES.values()


def test_an_error_built_outside_visa_has_its_class_code() -> None:
    assert LayoutError("x").code == "V300" and VisaError("x").code == "V000"
    assert str(LayoutError("x")) == "x [V300]"


def test_site_key_reads_the_first_words_of_the_literal_text() -> None:
    assert site_key("a/b/plan.py", "f", "LayoutError", "{…}: the stream walks {…}") == \
        "plan.f LayoutError: the stream walks"
    s = Site(Path("x.py"), 1, 1, "g", "DtypeError", "value {…} is outside", "", "")
    assert s.key == "x.g DtypeError: value is outside"


def test_citations_name_the_manuals_sections() -> None:
    assert section(1639) == "Sequencer › Insufficient Input"
    assert section(2386) == "DMA Engine › Interface"
    assert section(9999) is None
    assert cite("(L2386–2389)") == "(manual §DMA Engine › Interface, L2386–2389)"
    assert cite("(manual §Sequencer, L1639)") == "(manual §Sequencer, L1639)"
    with pytest.raises(MappingSyntaxError) as err:
        AxisSet(A=8).m["A / 3 / "]
    assert not re.search(r"(?<!, )\bL\d{3,4}", str(err.value))  # every citation has its section


def test_the_manual_page_is_current_and_the_docs_site_lists_it() -> None:
    from visa.manual import page

    assert (ROOT / "docs" / "manual.md").read_text() == page() + "\n", FIX
    nav = (ROOT / "mkdocs.yml").read_text()
    for name in ("errors.md", "manual.md", "tutorial/first-kernel.md", "tutorial/timeline.md",
                 "tutorial/tiling-gemm.md"):
        assert name in nav and (ROOT / "docs" / name).is_file()


def test_codes_quoted_in_the_docs_exist() -> None:
    """The README and the tutorial quote real diagnostics: a code they show must be in the catalogue."""
    texts = [ROOT / "README.md", *sorted((ROOT / "docs" / "tutorial").glob("*.md")), ROOT / "docs" / "index.md"]
    quoted = {c for path in texts for c in re.findall(r"\bV\d{4}\b", path.read_text())}
    assert quoted and quoted <= set(CODES.values()), quoted - set(CODES.values())


def test_assign_gives_a_new_site_the_next_free_code_of_its_family_never_a_retired_one() -> None:
    from visa.catalogue import assign

    new = Site(Path("visa/engines/fetch.py"), 1, 1, "brand_new", "LayoutError", "a new refusal {…}", "", "")
    top = max(int(c[2:]) for c in [*CODES.values(), *RETIRED.values()] if c[1] == "3")
    retired = f"V3{top + 1:03d}"
    out = assign([new], dict(CODES) | {f"retired {retired}": retired})
    assert out[new.key] == f"V3{top + 2:03d}"  # LayoutError is family 3; the retired code is skipped
    assert {k: v for k, v in out.items() if k != new.key} == dict(CODES) | {f"retired {retired}": retired}


def test_the_docs_site_names_sections_outside_code() -> None:
    from visa.manual import cite_markdown

    page = "Prose (L2386–2389).\n`L1639` in code\n```\nL1639 in a block\n```\n| x | L1639 | L154 |"
    assert cite_markdown(page).split("\n") == [
        "Prose (manual §DMA Engine › Interface, L2386–2389).", "`L1639` in code", "```", "L1639 in a block", "```",
        "| x | manual §Sequencer › Insufficient Input, L1639 | manual §Tensor Contraction Processor › Execution "
        "Contexts, L154 |"]
