"""The SIMT interpreter (tilelang_core.simt.interpreter) with the cuda backend's own helpers:
``tl_ldmatrix_*`` and the ``tl_mma_*`` instructions (.tf32 operands truncated), implemented from
their PTX definitions. The fragment tables below are written from the PTX ISA ("Matrix Fragments for
mma.m16n8k16 / m16n8k8 / m16n8k32") on purpose apart from layouts.py, so that CI checks the
lowering's lane arithmetic against a second reading of the ISA. CI runs lowered cuda kernels with
it against torch without a GPU.

Example::

    mod = CudaBackend(target).lower(func)
    run_kernel(mod["gemm"], {"A": a, "B": b, "C": c})    # numpy arrays, written in place
"""

from __future__ import annotations

import numpy as np
from tvm import tirx

from tilelang_core.simt.interpreter import NOT_HANDLED, Interpreter, Pointer

WARP = 32


# (row, col) of register element i of lane (group g = lane // 4, thread in group t = lane % 4)
def _a_m16n8k16(g, t, i):
    return g + 8 * ((i // 2) % 2), t * 2 + (i & 1) + 8 * (i // 4)


def _b_m16n8k16(g, t, i):  # (k, n)
    return t * 2 + (i & 1) + 8 * (i // 2), g


def _a_m16n8k8_tf32(g, t, i):  # a0..a3: (g, t), (g+8, t), (g, t+4), (g+8, t+4)
    return g + 8 * (i % 2), t + 4 * (i // 2)


def _b_m16n8k8_tf32(g, t, i):  # b0, b1: (k = t, n = g), (t + 4, g)
    return t + 4 * i, g


def _a_m16n8k32_8bit(g, t, i):  # a0..a3 row g, a4..a7 row g+8, a8..a15 the same 16 k further
    return g + 8 * ((i // 4) % 2), t * 4 + (i & 3) + 16 * (i // 8)


def _b_m16n8k32_8bit(g, t, i):
    return t * 4 + (i & 3) + 16 * (i // 4), g


def _c_m16n8(g, t, i):  # fp32, fp16 and s32 accumulators alike
    return g + 8 * (i // 2), t * 2 + (i & 1)


def tf32_truncate(x):
    """The operand value an mma .tf32 instruction uses: the low 13 mantissa bits ignored."""
    bits = np.asarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFFE000)
    return bits.view(np.float32)


#: helper -> (M, K, A table, B table, operand transform, accumulate in, result type); N = 8
_MMA = {
    "tl_mma_m16n8k16_f16_f32": (16, 16, _a_m16n8k16, _b_m16n8k16, None, np.float64, np.float32),
    "tl_mma_m16n8k16_bf16_f32": (16, 16, _a_m16n8k16, _b_m16n8k16, None, np.float64, np.float32),
    "tl_mma_m16n8k16_f16_f16": (16, 16, _a_m16n8k16, _b_m16n8k16, None, np.float64, np.float16),
    "tl_mma_m16n8k8_tf32_f32": (16, 8, _a_m16n8k8_tf32, _b_m16n8k8_tf32, tf32_truncate, np.float64, np.float32),
    "tl_mma_m16n8k32_s8_s32": (16, 32, _a_m16n8k32_8bit, _b_m16n8k32_8bit, None, np.int64, np.int32),
    "tl_mma_m16n8k32_u8_s32": (16, 32, _a_m16n8k32_8bit, _b_m16n8k32_8bit, None, np.int64, np.int32),
}


#: paired_folds.py's helpers: __hmax2/__hmin2 return the other operand where one is NaN (fmax),
#: the _nan forms NaN
_PAIRED_FOLDS = {"add2": np.add, "max2": np.fmax, "min2": np.fmin, "max2_nan": np.maximum, "min2_nan": np.minimum}


class CudaInterpreter(Interpreter):
    def device_helper(self, name: str, args, mask):
        if name.startswith("tl_ldmatrix"):
            return self._ldmatrix(name, self.pointer(args[0]), self.pointer(args[1]), mask)
        if name in _MMA:
            return self._mma(name, self.pointer(args[0]), self.pointer(args[1]), self.pointer(args[2]), mask)
        if name.startswith("tl::") and name.removesuffix("<true>")[4:] in _PAIRED_FOLDS:
            return self._paired_fold(name, self.pointer(args[0]), self.pointer(args[1]), mask)
        if name == "tl_red_add_v4":  # vector_atomics.py: 4 float additions per lane, lane by lane
            dst, src = self.pointer(args[0]), self.pointer(args[1])
            view = dst.storage.array.reshape(-1)
            # every lane's 4 sources in one read (a shared source: the race check sees its lanes)
            values = src.storage.read(src.index[None, :] + np.arange(4)[:, None], mask)
            for lane in np.nonzero(mask)[0]:
                view[dst.index[lane] + np.arange(4)] += values[:, lane].astype(view.dtype)
            return None
        return NOT_HANDLED

    def _paired_fold(self, name: str, acc: Pointer, v: Pointer, mask):
        """paired_folds.py: two lanes of ``acc`` folded with two of ``v`` (|v| with ``<true>``),
        rounded to the registers' type as the half2 instruction rounds."""
        fold = _PAIRED_FOLDS[name.removesuffix("<true>")[4:]]
        pair = np.arange(2)[:, None]
        at, values = acc.index[None, :] + pair, v.storage.read(v.index[None, :] + pair, mask)
        if name.endswith("<true>"):
            values = np.abs(values)
        acc.storage.write(at, fold(acc.storage.read(at, mask), values), mask)
        return None

    def _ldmatrix(self, name: str, regs: Pointer, smem: Pointer, mask):
        """Each 8x8 matrix of 16-bit units is 8 rows of 16 bytes; lane t receives 4 bytes of row
        t // 4 (bytes 4 * (t % 4) on), i.e. ``per`` elements of ``per`` = 4 / element bytes."""
        count = int(name.split("_x")[1][0])  # tl_ldmatrix_x<count>[_trans]
        trans = name.endswith("_trans")
        per = 4 // smem.storage.elem_bytes
        if trans and per != 2:
            raise RuntimeError(f"{name} transposes 16-bit elements, not {smem.storage.elem_bytes}-byte ones")
        for lanes in self.whole_warps(mask, WARP, "ldmatrix"):
            for q in range(count):
                # lane q * 8 + r gives row r's address: one read of the 8 rows, by those lanes
                # (the race check sees which warp reads what)
                providers = lanes[q * 8:q * 8 + 8]
                flat = np.zeros((4 * per, self.lanes), dtype=np.int64)
                flat[:, providers] = smem.index[providers][None, :] + np.arange(4 * per)[:, None]
                readers = np.zeros(self.lanes, dtype=bool)
                readers[providers] = True
                mat = smem.storage.read(flat, readers)[:, providers].T  # 8 rows x 16 bytes
                for t in range(32):
                    if trans:
                        part = [mat[2 * (t % 4), t // 4], mat[2 * (t % 4) + 1, t // 4]]
                    else:
                        part = mat[t // 4, per * (t % 4): per * (t % 4) + per]
                    lane = lanes[t]
                    for j in range(per):
                        regs.storage.array[lane, regs.index[lane] + per * q + j] = part[j]

    def _mma(self, name: str, c: Pointer, a: Pointer, b: Pointer, mask):
        m, k, a_at, b_at, operand, acc, out = _MMA[name]
        a_regs, b_regs = m * k // WARP, k * 8 // WARP
        for lanes in self.whole_warps(mask, WARP, "mma.sync"):
            A, B, C = np.zeros((m, k), acc), np.zeros((k, 8), acc), np.zeros((m, 8), acc)
            for t in range(32):
                lane, g, tig = lanes[t], t // 4, t % 4
                for r in range(a_regs):
                    value = a.storage.array[lane, a.index[lane] + r]
                    A[a_at(g, tig, r)] = operand(value) if operand else value
                for r in range(b_regs):
                    value = b.storage.array[lane, b.index[lane] + r]
                    B[b_at(g, tig, r)] = operand(value) if operand else value
                for r in range(4):
                    C[_c_m16n8(g, tig, r)] = c.storage.array[lane, c.index[lane] + r]
            D = A @ B + C
            # s32 accumulators wrap (no .satfinite), fp32 and fp16 ones round once (a model: the
            # hardware's internal order and precision of the sum are not specified)
            D = (D.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32) if out is np.int32 \
                else D.astype(out)
            for t in range(32):
                lane, g, tig = lanes[t], t // 4, t % 4
                for r in range(4):
                    c.storage.array[lane, c.index[lane] + r] = D[_c_m16n8(g, tig, r)]


def run_kernel(func: tirx.PrimFunc, args: dict, **modes) -> None:
    """Run a lowered cuda kernel on numpy arrays (by parameter name); outputs are written in place.
    ``modes``: the kit interpreter's switches (``cp_async_lands_at_wait=True``)."""
    CudaInterpreter(func, args, **modes).run()


__all__ = ["CudaInterpreter", "run_kernel", "tf32_truncate"]
