"""The memory tiers as byte images, placement rules and the live-tensor registry (manual L132–155,
L1070–1093).  Tensor handles live one layer up, in :mod:`visa.tensors`."""
