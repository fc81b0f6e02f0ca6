"""A program that fails with a diagnostic, and the same program fixed (``visa explain CODE`` prints both;
``docs/errors.md`` shows the failing one and the fix as a diff).

Keyed by the diagnostic's *site key* (:func:`visa.diagnostics.site_key`), not its code, so that renumbering
codes never detaches a snippet.  ``tests/test_snippets.py`` runs every pair: the failing one must raise exactly
its site's code, the fixed one must run.  Each snippet is a whole program (imports included); most are one
one-chip kernel, one pass over a DM tensor, or the manual's dot product, with a line or two changed
(:mod:`visa.snippets.base`).
"""

from __future__ import annotations

from visa.snippets.base import Snippet
from visa.snippets.contraction import CONTRACTION
from visa.snippets.engines_commit import ENGINES_COMMIT
from visa.snippets.engines_contraction import ENGINES_CONTRACTION
from visa.snippets.engines_dma import ENGINES_DMA
from visa.snippets.engines_fetch import ENGINES_FETCH
from visa.snippets.engines_gather import ENGINES_GATHER
from visa.snippets.engines_moves import ENGINES_MOVES
from visa.snippets.engines_shift import ENGINES_SHIFT
from visa.snippets.engines_switch import ENGINES_SWITCH
from visa.snippets.engines_transpose import ENGINES_TRANSPOSE
from visa.snippets.engines_vector import ENGINES_VECTOR
from visa.snippets.host import HOST
from visa.snippets.kernels import KERNELS
from visa.snippets.kernels_lib import KERNELS_LIB
from visa.snippets.launches import LAUNCHES
from visa.snippets.mapping_more import MAPPING_MORE
from visa.snippets.mappings import MAPPINGS
from visa.snippets.models import MODELS
from visa.snippets.streams import STREAMS
from visa.snippets.tensors import TENSORS
from visa.snippets.tools import TOOLS
from visa.snippets.values import VALUES

__all__ = ["Snippet", "SNIPPETS"]

#: site key → the failing and the fixed program.
SNIPPETS: dict[str, Snippet] = {**MAPPINGS, **VALUES, **HOST, **KERNELS, **STREAMS, **CONTRACTION,
                               **MAPPING_MORE, **TENSORS, **TOOLS, **LAUNCHES, **KERNELS_LIB, **MODELS,
                               **ENGINES_VECTOR, **ENGINES_FETCH, **ENGINES_COMMIT, **ENGINES_DMA,
                               **ENGINES_GATHER, **ENGINES_MOVES, **ENGINES_CONTRACTION, **ENGINES_SWITCH,
                               **ENGINES_TRANSPOSE, **ENGINES_SHIFT}
