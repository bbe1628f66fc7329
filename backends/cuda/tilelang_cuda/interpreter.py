"""The SIMT interpreter (tilelang_core.simt.interpreter) with the cuda backend's own helpers:
``tl_ldmatrix_*`` and ``tl_mma_m16n8k16_*``, implemented from their PTX definitions (the fragment
tables in layouts.py). CI runs lowered cuda kernels with it against torch without a GPU.

Example::

    mod = CudaBackend(target).lower(func)
    run_kernel(mod["gemm"], {"A": a, "B": b, "C": c})    # numpy arrays, written in place
"""

from __future__ import annotations

import numpy as np
from tvm import tirx

from tilelang_core.simt.interpreter import NOT_HANDLED, Interpreter, Pointer

WARP = 32


class CudaInterpreter(Interpreter):
    def device_helper(self, name: str, args, mask):
        if name.startswith("tl_ldmatrix"):
            return self._ldmatrix(name, self.pointer(args[0]), self.pointer(args[1]), mask)
        if name.startswith("tl_mma_m16n8k16"):
            return self._mma(self.pointer(args[0]), self.pointer(args[1]), self.pointer(args[2]), mask)
        return NOT_HANDLED

    def _ldmatrix(self, name: str, regs: Pointer, smem: Pointer, mask):
        count = 4 if "_x4" in name else 2
        trans = name.endswith("_trans")
        for lanes in self.whole_warps(mask, WARP, "ldmatrix"):
            for q in range(count):
                rows = [smem.storage.read(smem.index[lanes[q * 8 + r]] + np.arange(8),
                                          np.ones(8, dtype=bool)) for r in range(8)]
                mat = np.stack(rows)  # 8 x 8
                for t in range(32):
                    if trans:
                        pair = [mat[2 * (t % 4), t // 4], mat[2 * (t % 4) + 1, t // 4]]
                    else:
                        pair = [mat[t // 4, 2 * (t % 4)], mat[t // 4, 2 * (t % 4) + 1]]
                    lane = lanes[t]
                    for j in range(2):
                        regs.storage.array[lane, regs.index[lane] + 2 * q + j] = pair[j]

    def _mma(self, c: Pointer, a: Pointer, b: Pointer, mask):
        for lanes in self.whole_warps(mask, WARP, "mma.sync"):
            A = np.zeros((16, 16), np.float64)
            B = np.zeros((16, 8), np.float64)
            C = np.zeros((16, 8), np.float64)
            for t in range(32):
                lane, g, tig = lanes[t], t // 4, t % 4
                for r in range(8):
                    A[g + 8 * ((r // 2) % 2), tig * 2 + (r & 1) + 8 * (r // 4)] = \
                        a.storage.array[lane, a.index[lane] + r]
                for r in range(4):
                    B[tig * 2 + (r & 1) + 8 * (r // 2), g] = b.storage.array[lane, b.index[lane] + r]
                    C[g + 8 * (r // 2), tig * 2 + (r & 1)] = c.storage.array[lane, c.index[lane] + r]
            D = (A @ B + C).astype(np.float32)
            for t in range(32):
                lane, g, tig = lanes[t], t // 4, t % 4
                for r in range(4):
                    c.storage.array[lane, c.index[lane] + r] = D[g + 8 * (r // 2), tig * 2 + (r & 1)]


def run_kernel(func: tirx.PrimFunc, args: dict) -> None:
    """Run a lowered cuda kernel on numpy arrays (by parameter name); outputs are written in place."""
    CudaInterpreter(func, args).run()


__all__ = ["CudaInterpreter", "run_kernel"]
