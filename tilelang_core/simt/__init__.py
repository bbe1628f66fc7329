"""The SIMT kit: target-neutral lowering of tile programs for GPU-like backends (CUDA, HIP, Metal).

Not imported by ``import tilelang_core``: a backend imports it on its first compile (it needs tvm).
"""
