"""The engines of the Tensor Unit and the DMA: one module each, with pure ``plan``/``execute``/``cycles``."""

# The engines' fast paths register themselves at import (visa.fastpaths lists every one after ``import visa``).
from visa.engines import collect as _collect  # noqa: E402, F401
from visa.engines import commit as _commit  # noqa: E402, F401
from visa.engines import fetch_fast as _fetch_fast  # noqa: E402, F401
from visa.engines import transpose as _transpose  # noqa: E402, F401
from visa.engines.contraction import fast_window as _fast_window  # noqa: E402, F401
from visa.engines.dma import shuffle as _shuffle  # noqa: E402, F401
from visa.engines.vector import fast_reduce as _fast_reduce  # noqa: E402, F401
from visa.engines.vector import relayout as _relayout  # noqa: E402, F401
