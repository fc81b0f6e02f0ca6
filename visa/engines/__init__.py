"""The engines of the Tensor Unit and the DMA: one module each, with pure ``plan``/``execute``/``cycles``."""

# numpy imports ``numpy.ma`` on the first ``np.unique`` of a process (numpy 2's lazy submodules): 60–130 ms that
# the first launch of a kernel paid inside its first plan (issue 24); the engines call ``np.unique`` in their plans
# and costs, so they import it with themselves.
import numpy.ma  # noqa: F401
