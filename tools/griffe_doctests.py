"""A griffe extension for the API reference (``make docs``): the docstrings are written for Python's help() and
doctest (reStructuredText roles, ``>>>`` examples); this turns them into Markdown that MkDocs renders as meant.

* a ``>>>`` example and its output lines become a ``pycon`` code block (otherwise ``[64, 32]`` in an output
  reads as a Markdown link);
* ``:class:`~visa.errors.VisaError``` and the other roles become code spans (``VisaError``);
* a manual citation ``L1639`` names its section, as the error messages do.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj):`~?([^`]+)`")


def _markdown(text: str) -> str:
    from visa.manual import cite_markdown

    text = _ROLE.sub(lambda g: f"`{g.group(1).split('.')[-1] if g.group(0).count('~') else g.group(1)}`", text)
    out: list[str] = []
    in_block = False
    for line in text.splitlines():
        if not in_block and line.lstrip().startswith(">>>"):
            out += ["", "```pycon"] if out and out[-1].strip() else ["```pycon"]
            in_block = True
        elif in_block and not line.strip():
            out.append("```")
            in_block = False
        out.append(line)
    if in_block:
        out.append("```")
    return cite_markdown("\n".join(out))


class DoctestBlocks(griffe.Extension):
    """Rewrite every docstring once it is loaded."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _markdown(obj.docstring.value)
