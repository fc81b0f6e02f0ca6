"""The engines of the Tensor Unit and the DMA: one module each, with pure ``plan``/``execute``/``cycles``."""

# numpy imports ``numpy.ma`` on the first ``np.unique`` of a process (numpy 2's lazy submodules): 60–130 ms that
# the first launch of a kernel paid inside its first plan (issue 24); the engines call ``np.unique`` in their plans
# and costs, so they import it with themselves.
import numpy.ma  # noqa: F401

# The engines' fast paths register themselves at import (visa.fastpaths lists every one after ``import visa``).
from visa.engines import collect as _collect  # noqa: E402, F401
from visa.engines import commit as _commit  # noqa: E402, F401
from visa.engines import fast_fetch_shared as _fast_fetch_shared  # noqa: E402, F401
from visa.engines import fetch_fast as _fetch_fast  # noqa: E402, F401
from visa.engines import transpose as _transpose  # noqa: E402, F401
from visa.engines.contraction import fast_window as _fast_window  # noqa: E402, F401
from visa.engines.dma import shuffle as _shuffle  # noqa: E402, F401
from visa.engines.vector import fast_reduce as _fast_reduce  # noqa: E402, F401
from visa.engines.vector import relayout as _relayout  # noqa: E402, F401
