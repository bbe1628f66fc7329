"""The cuda rule table: the SIMT kit's rules (copy, fill, reduce, atomic, cumsum; see
tilelang_core/simt) with this backend's gemm (mma.sync, lower_gemm.py) and float32 tile atomics
from shared memory (vector reductions, vector_atomics.py), and the kit's knobs for CUDA.

Rules are looked up by kind at LowerTileOps; importing this module registers them (idempotent).
"""

from __future__ import annotations

from tilelang_core.language.warp_matrix import ldmatrix_name, mma_form
from tilelang_core.simt import SimtDialect, register_simt_rules

from .lower_gemm import lower_gemm
from .mma import INSTRUCTIONS as MMA_INSTRUCTIONS
from .paired_folds import FOLDS as PAIRED_FOLDS
from .vector_atomics import lower_atomic

KIND = "cuda"

#: T.ptx_ldmatrix / T.ptx_mma (language/warp_matrix.py): the prelude's ldmatrix and mma.sync
#: helpers, the ones T.gemm runs on (every arch this backend supports has them all)
WARP_MATRIX = {**{ldmatrix_name(num, trans): f"tl_{ldmatrix_name(num, trans)}" for num in (1, 2, 4)
                  for trans in (False, True)},
               **{mma_form(instr.shape, *types): instr.helper for types, instr in MMA_INSTRUCTIONS.items()}}

#: 32-lane warps, cp.async from sm_80 on (every arch this backend supports), the prelude's helpers;
#: 8 float32 values in a vector (intrinsics.py's make_ulonglong4 of 8 floats)
CUDA = SimtDialect(kind=KIND, warp_size=32, async_copy=True, named_barriers=True, mbarriers=True, max_nreg=True,
                   grid_dependency=True, grid_sync=True, device_print=True, paired_folds=PAIRED_FOLDS,
                   value_vector_bytes=32, warp_matrix=WARP_MATRIX)

register_simt_rules(KIND, gemm=lower_gemm, atomic=lower_atomic)
