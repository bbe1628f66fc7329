"""The SIMT interpreter (tilelang_core.simt.interpreter) with the hip backend's matrix helpers.

Each ``tl_mfma_*``/``tl_wmma_*`` helper is modelled the way the prelude implements it: the
builtin called with A and B swapped, and the builtin itself from the ISA's operand tables
(written out here independently of layouts.py, so a wrong layout there fails the numerics):

    MFMA f32_SxSxK (wave64, G = 64 / S):  srcA[i][k] at lane i + S * (k // 4), item k % 4;
        srcB[k][j] at lane j + S * (k // 4), item k % 4;
        D[i][j] at lane j + S * ((i // 4) % G), register (i // (4 G)) * 4 + i % 4
    WMMA f32_16x16x16 (wave32): srcA[i][k] at lane i and i + 16 (must be equal), item k;
        srcB[k][j] at lane j and j + 16, item k;  D[i][j] at lane j + 16 * (i % 2), register i // 2

CI runs lowered hip kernels with it against torch in float64 without an AMD GPU. The wave size
comes from the helper's family (64 for MFMA, 32 for WMMA).

Example::

    mod = HipBackend(target).lower(func)
    run_kernel(mod["gemm"], {"A": a, "B": b, "C": c})    # numpy arrays, written in place
"""

from __future__ import annotations

import re

import numpy as np
from tvm import tirx

from tilelang_core.simt.interpreter import NOT_HANDLED, Interpreter, Pointer

_MFMA = re.compile(r"tl_mfma_f32_(\d+)x\d+x(\d+)_(f16|bf16)$")
_WMMA = re.compile(r"tl_wmma_f32_16x16x16_(f16|bf16)(_ra)?$")


def _regs(ptr: Pointer, lane: int, count: int) -> np.ndarray:
    return ptr.storage.array[lane, ptr.index[lane] + np.arange(count)].astype(np.float64)


class HipInterpreter(Interpreter):
    def device_helper(self, name: str, args, mask):
        found = _MFMA.match(name)
        if found:
            size, k = int(found.group(1)), int(found.group(2))
            c, a, b = (self.pointer(x) for x in args)
            return self._mfma(size, k, c, src_a=b, src_b=a, mask=mask)
        if name == "tl_opaque":  # an optimization barrier: the value itself
            return np.broadcast_to(self.expr(args[0]), (self.lanes,))
        if name == "tl_sched_barrier":
            return None
        if name == "tl_read_column_pair":
            return self._read_column_pair(*(self.pointer(x) for x in args[:2]), args[2], mask)
        found = _WMMA.match(name)
        if found:
            c, a, b = (self.pointer(x) for x in args)
            return self._wmma(c, src_a=b, src_b=a, a_from_acc=bool(found.group(2)), mask=mask)
        return NOT_HANDLED

    def _read_column_pair(self, dst: Pointer, src: Pointer, odd, mask):
        """Its contract: the even lane gets (its word's low, lane ^ 1's low), the odd lane
        (lane ^ 1's high, its word's high); every lane of the wave takes part."""
        list(self.whole_warps(mask, 2, "tl_read_column_pair"))  # both lanes of each pair
        odd = np.broadcast_to(self.expr(odd), (self.lanes,)).astype(bool)
        low, high = src.storage.read(src.index, mask), src.storage.read(src.index + 1, mask)
        partner = np.arange(self.lanes) ^ 1
        dst.storage.write(dst.index, np.where(odd, high[partner], low), mask)
        dst.storage.write(dst.index + 1, np.where(odd, high, low[partner]), mask)
        return None

    def _mfma(self, size: int, k: int, c: Pointer, src_a: Pointer, src_b: Pointer, mask):
        groups = 64 // size
        regs = size * size // 64
        for lanes in self.whole_warps(mask, 64, f"v_mfma_f32_{size}x{size}x{k}"):
            X, Y, D = np.zeros((size, k)), np.zeros((k, size)), np.zeros((size, size))
            for i in range(size):
                for kk in range(k):
                    X[i, kk] = _regs(src_a, lanes[i + size * (kk // 4)], 4)[kk % 4]
                    Y[kk, i] = _regs(src_b, lanes[i + size * (kk // 4)], 4)[kk % 4]
            for i in range(size):
                for j in range(size):
                    lane = lanes[j + size * ((i // 4) % groups)]
                    D[i, j] = _regs(c, lane, regs)[(i // (4 * groups)) * 4 + i % 4]
            D = X @ Y + D
            for i in range(size):
                for j in range(size):
                    lane = lanes[j + size * ((i // 4) % groups)]
                    c.storage.array[lane, c.index[lane] + (i // (4 * groups)) * 4 + i % 4] = D[i, j]

    def _wmma(self, c: Pointer, src_a: Pointer, src_b: Pointer, a_from_acc: bool, mask):
        for lanes in self.whole_warps(mask, 32, "v_wmma_f32_16x16x16"):
            X, Y = np.zeros((16, 16)), np.zeros((16, 16))
            for i in range(16):
                rows_x = [_regs(src_a, lanes[i + h], 16) for h in (0, 16)]
                rows_y = [self._wmma_a_row(src_b, lanes, i + h, a_from_acc) for h in (0, 16)]
                for what, rows in (("srcA", rows_x), ("srcB", rows_y)):
                    if not np.array_equal(rows[0], rows[1], equal_nan=True):
                        raise RuntimeError(f"v_wmma: {what} lanes {i} and {i + 16} hold different "
                                           f"values (wave32 WMMA needs both halves equal)")
                X[i, :] = rows_x[0]   # srcA row i = B^T row i (the helper swaps A and B)
                Y[:, i] = rows_y[0]   # srcB column i = A row i
            D = np.zeros((16, 16))
            for i in range(16):
                for j in range(16):
                    lane = lanes[j + 16 * (i % 2)]
                    D[i, j] = c.storage.array[lane, c.index[lane] + i // 2]
            D = X @ Y + D
            for i in range(16):
                for j in range(16):
                    lane = lanes[j + 16 * (i % 2)]
                    c.storage.array[lane, c.index[lane] + i // 2] = D[i, j]

    @staticmethod
    def _wmma_a_row(a: Pointer, lanes, t: int, from_acc: bool) -> np.ndarray:
        """The 16 K values lane ``t`` passes as the helper's A: its own registers, or (``_ra``)
        its 8 accumulator-layout values (k = 2 v + g) merged with those of lane t ^ 16."""
        if not from_acc:
            return _regs(a, lanes[t], 16)
        g = t // 16
        row = np.zeros(16)
        row[np.arange(8) * 2 + g] = _regs(a, lanes[t], 8)
        row[np.arange(8) * 2 + 1 - g] = _regs(a, lanes[t ^ 16], 8)
        return row


def run_kernel(func: tirx.PrimFunc, args: dict) -> None:
    """Run a lowered hip kernel on numpy arrays (by parameter name); outputs are written in place."""
    HipInterpreter(func, args).run()


__all__ = ["HipInterpreter", "run_kernel"]
