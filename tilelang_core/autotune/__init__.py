"""Autotuning: ``@autotune`` on a ``@jit`` factory picks its fastest correct config.

    import tilelang_core as tl

    @tl.autotune(configs={"block_M": [64, 128], "block_N": [64, 128]}, ref_prog=ref, timeout=60)
    @tl.jit(out_idx=[-1])
    def matmul(M, N, K, block_M=128, block_N=128): ...

    kernel = matmul(1024, 1024, 1024)

Modules: ``space`` (config forms), ``spec`` (what a compile worker gets, the worker function),
``local`` (the process pool), ``ray_executor`` (Ray tasks), ``measure`` (check + time one kernel),
``results_cache`` (results on disk), ``tuner`` (the search and the decorator).
"""

from .space import expand_configs
from .tuner import AutoTuner, AutotuneResult, CandidateResult, autotune

__all__ = ["AutoTuner", "AutotuneResult", "CandidateResult", "autotune", "expand_configs"]
