"""Compile options of the metal backend: frozen, validated, with a stable hash (BackendOptions)."""

from __future__ import annotations

from dataclasses import dataclass

from tilelang_core.backend import BackendOptions


@dataclass(frozen=True)
class MetalOptions(BackendOptions):
    """Options of one metal compile.

    disable_thread_storage_sync: insert no barriers between shared-memory accesses (TileLang's
        key): the kernel's own T.sync_threads / T.sync_warp order them, as in TileLang.
    disable_simdgroup_matrix: lower every T.gemm with the SIMT kit's scalar FMA path instead of
        simdgroup_matrix 8x8 multiply-accumulates (for debugging and comparison).

    Example::

        MetalOptions.from_pass_configs({"disable_simdgroup_matrix": True})
    """

    disable_simdgroup_matrix: bool = False
    disable_thread_storage_sync: bool = False

    def __post_init__(self):
        self.check_flags("metal")
