"""Autotuning: ``@autotune`` on a ``@jit`` function picks its fastest correct config.

    import tilelang_core as tl

    @tl.autotune(configs={"block_M": [64, 128], "block_N": [64, 128]}, ref_prog=ref, timeout=60)
    @tl.jit(out_idx=[-1])
    def matmul(M, N, K, block_M=128, block_N=128): ...

    kernel = matmul(1024, 1024, 1024)

``tilelang_core.autotuner`` is the same tuner under TileLang's module name (``AutoTuner``'s builder
API, ``set_autotune_inputs``).

Modules: ``space`` (config forms), ``spec`` (what a compile worker gets, the worker function),
``local`` (the process pool), ``ray_executor`` (Ray tasks), ``measure`` (check + time one kernel),
``results_cache`` (results on disk), ``capture`` (set_autotune_inputs), ``builder`` (TileLang's
builder methods), ``tuner`` (the search and the decorator).
"""

from .capture import get_autotune_inputs, set_autotune_inputs
from .space import expand_configs
from .tuner import AutoTuner, AutotuneResult, CandidateResult, autotune

__all__ = ["AutoTuner", "AutotuneResult", "CandidateResult", "autotune", "expand_configs",
           "get_autotune_inputs", "set_autotune_inputs"]
