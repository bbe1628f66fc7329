"""TileLang's ``tilelang.rocm`` namespace: what its tests import about AMD GPUs (``target``)."""
