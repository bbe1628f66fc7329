"""The metal backend's interpret mode: the SIMT kit's interpreter (tilelang_core.simt.interpreter)
plus this backend's helpers, with reference semantics:

* ``simd_shuffle_xor(v, mask)``: lane ``l`` gets ``v`` of lane ``l ^ mask``;
* ``simd_sum`` / ``simd_max`` / ``simd_min``: every lane gets the reduction over its simdgroup;
* ``tl_simdgroup_gemm<MI, NI, KS, TA, TB>(c, a, lda, b, ldb)`` (intrinsics.py): per simdgroup,
  C += A @ B over 8x8 tiles, with the accumulator (and a register A) read from and written to
  the lanes' registers in simdgroup_matrix order (layouts.py: row 4*b4 + 2*b2 + b1, columns
  4*b3 + 2*b0 + r), and A/B read from threadgroup memory with row strides lda/ldb.

CI runs lowered metal kernels with it against torch float64: copies, layouts, the T.Parallel
thread mapping, reductions and the gemm's operand addressing are checked without a Mac. What it
cannot check: that Apple's hardware uses the simdgroup_matrix element order above (MLX relies on
it), barriers (lockstep execution) and anything about the Metal compiler.

Example::

    mod = MetalBackend(target).lower(func)
    run_kernel(mod["gemm"], {"A": a, "B": b, "C": c})    # numpy arrays, written in place
"""

from __future__ import annotations

import re

import numpy as np
from tvm import tirx

from tilelang_core.simt.interpreter import NOT_HANDLED, Interpreter, Pointer

SIMDGROUP = 32
_GEMM = re.compile(r"tl_simdgroup_gemm<(\d+), (\d+), (\d+), (true|false), (true|false)>$")


def lane_coords(lane: int) -> tuple[int, int]:
    """(row, first column) of a lane's two elements in an 8x8 simdgroup_matrix."""
    return 4 * (lane >> 4 & 1) + 2 * (lane >> 2 & 1) + (lane >> 1 & 1), 4 * (lane >> 3 & 1) + 2 * (lane & 1)


class MetalInterpreter(Interpreter):
    def device_helper(self, name: str, args, mask):
        if name == "simd_shuffle_xor":
            value = np.broadcast_to(self.expr(args[0]), (self.lanes,))
            return value[np.arange(self.lanes) ^ int(self.expr(args[1]))]
        if name in ("simd_sum", "simd_max", "simd_min"):
            value = np.broadcast_to(self.expr(args[0]), (self.lanes,))
            fold = {"simd_sum": np.sum, "simd_max": np.max, "simd_min": np.min}[name]
            out = np.empty_like(value)
            for lanes in self.whole_warps(mask, min(SIMDGROUP, self.lanes), name):
                out[lanes] = fold(value[lanes])
            return out
        if name == "tl_sync_threads_device":  # the block barrier that orders device memory too
            if self.races is not None:
                self.races.barrier()
            return None
        m = _GEMM.match(name)
        if m:
            mi, ni, ks = (int(m.group(i)) for i in (1, 2, 3))
            self._gemm(mi, ni, ks, m.group(4) == "true", m.group(5) == "true", args, mask)
            return None
        return NOT_HANDLED

    def _fragment(self, ptr: Pointer, lanes, rows: int, cols: int, tiles_per_row: int) -> np.ndarray:
        """A (rows*8) x (cols*8) matrix held in registers in simdgroup_matrix order."""
        out = np.zeros((rows * 8, cols * 8), np.float64)
        for t, lane in enumerate(lanes):
            r0, c0 = lane_coords(t)
            for i in range(rows):
                for j in range(cols):
                    base = ptr.index[lane] + (i * tiles_per_row + j) * 2
                    out[i * 8 + r0, j * 8 + c0:j * 8 + c0 + 2] = ptr.storage.array[lane, base:base + 2]
        return out

    def _shared(self, ptr: Pointer, lanes, ld: int, rows: int, cols: int, transposed: bool) -> np.ndarray:
        """A rows x cols operand read from threadgroup memory (stored transposed if asked)."""
        starts = set(ptr.index[lanes].tolist())
        if len(starts) != 1:
            raise RuntimeError(f"tl_simdgroup_gemm: lanes of one simdgroup pass different tile addresses {starts}")
        base = starts.pop()
        i, j = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
        offsets = base + (j * ld + i if transposed else i * ld + j)
        return ptr.storage.values()[offsets].astype(np.float64)

    def _gemm(self, mi, ni, ks, ta, tb, args, mask):
        c, a, b = self.pointer(args[0]), self.pointer(args[1]), self.pointer(args[3])
        lda, ldb = int(self.expr(args[2])), int(self.expr(args[4]))
        for lanes in self.whole_warps(mask, SIMDGROUP, "tl_simdgroup_gemm"):
            acc = self._fragment(c, lanes, mi, ni, ni)
            A = self._fragment(a, lanes, mi, ks, ks) if a.storage.per_lane else \
                self._shared(a, lanes, lda, mi * 8, ks * 8, ta)
            B = self._shared(b, lanes, ldb, ks * 8, ni * 8, tb)
            acc = acc + A @ B
            for t, lane in enumerate(lanes):
                r0, c0 = lane_coords(t)
                for i in range(mi):
                    for j in range(ni):
                        base = c.index[lane] + (i * ni + j) * 2
                        c.storage.array[lane, base:base + 2] = acc[i * 8 + r0, j * 8 + c0:j * 8 + c0 + 2]


def run_kernel(func: tirx.PrimFunc, args: dict) -> None:
    """Run a lowered metal kernel on numpy arrays (by parameter name); outputs are written in place."""
    MetalInterpreter(func, args).run()


__all__ = ["MetalInterpreter", "lane_coords", "run_kernel"]
