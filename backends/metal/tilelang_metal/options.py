"""Compile options of the metal backend: frozen, validated, with a stable hash (BackendOptions)."""

from __future__ import annotations

from dataclasses import dataclass

from tilelang_core.backend import BackendOptions


@dataclass(frozen=True)
class MetalOptions(BackendOptions):
    """Options of one metal compile.

    disable_simdgroup_matrix: lower every T.gemm with the SIMT kit's scalar FMA path instead of
        simdgroup_matrix 8x8 multiply-accumulates (for debugging and comparison).

    Example::

        MetalOptions.from_pass_configs({"disable_simdgroup_matrix": True})
    """

    disable_simdgroup_matrix: bool = False

    def __post_init__(self):
        self.check_flags("metal")
