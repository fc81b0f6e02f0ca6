"""The engines of the Tensor Unit and the DMA: one module each, with pure ``plan``/``execute``/``cycles``."""
