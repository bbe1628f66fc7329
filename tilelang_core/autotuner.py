"""TileLang's ``tilelang.autotuner`` module: the tuner of ``tilelang_core.autotune`` under that name.

    from tilelang_core.autotuner import *          # autotune, AutoTuner, set_autotune_inputs, ...

    result = AutoTuner.from_kernel(kernel=factory, configs=configs) \\
        .set_compile_args(out_idx=[-1]).set_profile_args(ref_prog=ref).run(warmup=3, rep=20)
"""

from .autotune import AutoTuner, AutotuneResult, autotune, get_autotune_inputs, set_autotune_inputs

__all__ = ["AutoTuner", "AutotuneResult", "autotune", "get_autotune_inputs", "set_autotune_inputs"]
