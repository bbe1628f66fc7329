"""TileLang's ``TensorCoreIntrinEmitter``: hand-written mma.sync GEMMs, warp by warp.

A kernel that wants its own register tiling (TileLang's ``example_gemm_intrinsics``, BitBLAS-style
dequantizing GEMMs) builds the emitter once and calls its macros inside ``T.Kernel``::

    emitter = TensorCoreIntrinEmitter(a_dtype=T.float16, b_dtype=T.float16, accum_dtype=T.float32,
                                      a_transposed=False, b_transposed=True, block_row_warps=2,
                                      block_col_warps=2, warp_row_tiles=64, warp_col_tiles=64, chunk=32)
    A_local = T.alloc_local((emitter.warp_rows * emitter.local_size_a,), T.float16)
    ...
    for ki in T.serial(block_K // emitter.micro_size_k):
        emitter.ldmatrix_a(A_local, A_shared, ki)   # this warp's A tiles of k-step ki
        emitter.ldmatrix_b(B_local, B_shared, ki)
        emitter.mma(A_local, B_local, C_local)      # C_local += A @ B, tile by tile
    emitter.stmatrix(C_local, C_shared)             # C_local -> C_shared[M // 16, N // 16, 16, 16]

The meaning is TileLang's (tilelang/cuda/intrinsics/macro/mma_macro_generator.py in tile-ai/
tilelang; written anew here from the PTX ISA's fragment tables):

* Warps: thread ``tid`` is lane ``tid % 32`` of warp row ``(tid // 32) % block_row_warps`` and
  warp column ``(tid // (32 * block_row_warps)) % block_col_warps`` (``is_m_first=True`` swaps the
  two). A warp owns ``warp_row_tiles x warp_col_tiles`` of C: ``warp_rows`` 16-row tiles by
  ``warp_cols`` tiles of 16 columns (8 where ``warp_col_tiles`` is not a multiple of 16).
* One k-step is ``micro_size_k`` = 256 bits of K (16 fp16/bf16, 32 int8, 8 tf32).
  ``A_local[i * local_size_a:]`` holds this lane's A fragment of tile row ``i`` (the mma.sync
  m16n8k* A operand), ``B_local[j * local_size_b:]`` the B fragments of tile column ``j`` (two
  n8 halves where tiles are 16 wide), ``C_local[(i * warp_cols + j) * local_size_out:]`` the
  accumulators of tile (i, j): element ``e`` at row ``8 * (e % 4 // 2) + lane // 4``, column
  ``8 * (e // 4) + 2 * (lane % 4) + e % 2`` (``mma_store_index_map``).
* A is stored M x K (``a_transposed``: K x M), B K x N (``b_transposed``: N x K). Fragments load
  with ldmatrix (``.trans`` for the 16-bit transposed cases); an 8- or 32-bit operand stored the
  other way loads element by element, as ldmatrix cannot transpose it.

Each macro is plain statements of ``T.ptx_ldmatrix`` / ``T.ptx_mma`` (tilelang_core/language/
warp_matrix.py) and register stores, unrolled here, so the compiler sees every shared read and
register write: the cuda backend runs it (ldmatrix, mma.sync); other backends refuse it with the
target named. The accumulator may also be a ``T.alloc_fragment((block_M, block_N))`` laid out by
``make_mma_store_layout`` (TileLang's way to end with a T.copy or T.Parallel epilogue). Not
provided (a clear error): fp64 (m8n8k4), fp8 and fp16 accumulators, A/B operands in fragments and
``make_mma_load_layout``, the ladder-transform variant.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ....errors import FrontendError
from ....language.vector_access import start_of
from ....language.warp_matrix import MMA_FORMS, abbreviation
from ... import unavailable

WARP = 32
#: (A, B, C element types) -> the mma.sync shape of T.ptx_mma's forms
_FORMS = {tuple(types): shape for shape, *types in MMA_FORMS}


def _name(dtype) -> str:
    return str(getattr(dtype, "dtype", dtype))


def _bits(dtype) -> int:
    return tvm.runtime.DataType(_name(dtype)).bits


def _refuse(what: str) -> FrontendError:
    return FrontendError(f"TensorCoreIntrinEmitter: {what} is not provided by TileLang-X; write the product with "
                         f"T.gemm (the cuda backend picks ldmatrix/mma.sync or wgmma itself)")


# (row, col) of operand element r of lane (g = lane // 4, t = lane % 4): the PTX ISA's fragment
# tables of mma.m16n8k16 (16-bit), m16n8k32 (8-bit) and m16n8k8 (tf32). A is (m, k), B is (k, n).
def _a_element(bits: int, g, t, r: int):
    if bits == 16:
        return g + 8 * (r // 2 % 2), 2 * t + r % 2 + 8 * (r // 4)
    if bits == 8:
        return g + 8 * (r // 4 % 2), 4 * t + r % 4 + 16 * (r // 8)
    return g + 8 * (r % 2), t + 4 * (r // 2)


def _b_element(bits: int, g, t, r: int):
    if bits == 16:
        return 2 * t + r % 2 + 8 * (r // 2), g
    if bits == 8:
        return 4 * t + r % 4 + 16 * (r // 4), g
    return t + 4 * r, g


def mma_store_index_map(thread_id, local_id):
    """(row, col) in a 16x16 C tile of accumulator ``local_id`` (0..7) of lane ``thread_id``."""
    return 8 * (local_id % 4 // 2) + thread_id // 4, 8 * (local_id // 4) + thread_id % 4 * 2 + local_id % 2


def get_mma_micro_size(dtype):
    """(M, N, K) of one emitter tile for operands of ``dtype``: K is 32 for 8-bit types, else 16."""
    return 16, 16, 32 if _bits(dtype) == 8 else 16


def _region(obj, what: str):
    """(buffer, base indices) of an operand: a buffer, a region of one (a slice), or an element
    (the start of the tile)."""
    start = start_of(obj)
    if start is None:
        raise FrontendError(f"TensorCoreIntrinEmitter: {what} must be a buffer, a slice of one or an element, "
                            f"got {obj!r}")
    return start


def _is_fragment(buf) -> bool:
    return tirx.is_buffer_var(buf) and str(buf.ty.storage_scope) == "local.fragment"


def _registers(buf, what: str):
    if not tirx.is_buffer_var(buf) or str(buf.ty.storage_scope) != "local":
        scope = buf.ty.storage_scope if tirx.is_buffer_var(buf) else type(buf).__name__
        raise FrontendError(f"TensorCoreIntrinEmitter: {what} must be a T.alloc_local buffer (the thread's registers), "
                            f"got {scope}" + ("; of the operands only the accumulator may be a fragment (laid "
                                              "out by make_mma_store_layout)" if scope == "local.fragment" else ""))


class TensorCoreIntrinEmitter:
    """ldmatrix / mma.sync / accumulator-store macros for a block of warps (module docstring)."""

    M_DIM = 16
    WARP_SIZE = WARP
    is_m_first = False

    def __init__(self, a_dtype="float16", b_dtype="float16", accum_dtype="float16", a_transposed: bool = False,
                 b_transposed: bool = False, block_row_warps: int = 2, block_col_warps: int = 2,
                 warp_row_tiles: int = 8, warp_col_tiles: int = 8, chunk: int = 16, reduce_k: int = 1,
                 num_elems_per_byte: int = 1, is_m_first: bool | None = False, thread_var=None):
        self.a_dtype, self.b_dtype, self.accum_dtype = _name(a_dtype), _name(b_dtype), _name(accum_dtype)
        self.a_transposed, self.b_transposed = bool(a_transposed), bool(b_transposed)
        self.block_row_warps, self.block_col_warps = int(block_row_warps), int(block_col_warps)
        self.warp_row_tiles, self.warp_col_tiles, self.chunk = int(warp_row_tiles), int(warp_col_tiles), int(chunk)
        self.reduce_k, self.num_elems_per_byte, self.thread_var = int(reduce_k), num_elems_per_byte, thread_var
        if is_m_first is not None:
            self.is_m_first = bool(is_m_first)
        if num_elems_per_byte != 1:
            raise _refuse(f"num_elems_per_byte={num_elems_per_byte} (packed sub-byte operands)")
        self._check_types()
        self.bits = _bits(self.a_dtype)
        self.k_dim = min(256 // self.bits, self.chunk)
        if self.k_dim != 256 // self.bits:
            raise FrontendError(f"TensorCoreIntrinEmitter: chunk={chunk} is less than one mma.sync k-step "
                                f"({256 // self.bits} {self.a_dtype}); use a chunk of at least that")
        self.mma_prefix = _FORMS[(self.a_dtype, self.b_dtype, self.accum_dtype)]
        if self.warp_row_tiles < 16 or self.warp_row_tiles % 16:
            raise FrontendError(f"TensorCoreIntrinEmitter: warp_row_tiles must be a multiple of 16, got {warp_row_tiles}")
        if self.warp_col_tiles < 8 or self.warp_col_tiles % 8:
            raise FrontendError(f"TensorCoreIntrinEmitter: warp_col_tiles must be a multiple of 8, got {warp_col_tiles}")
        self.n_dim = 16 if self.warp_col_tiles % 16 == 0 else 8
        self.micro_size_x, self.micro_size_y, self.micro_size_k = self.M_DIM, self.n_dim, self.k_dim
        self.warp_rows = self.warp_row_tiles // self.M_DIM
        self.warp_cols = self.warp_col_tiles // self.n_dim
        self.local_size_a = self.M_DIM * self.k_dim // WARP
        self.local_size_b = self.n_dim * self.k_dim // WARP
        self.local_size_out = self.M_DIM * self.n_dim // WARP
        self.threads = WARP * self.block_row_warps * self.block_col_warps * self.reduce_k
        self.a_dtype_abbrv = abbreviation(self.a_dtype, operand=True)
        self.b_dtype_abbrv = abbreviation(self.b_dtype, operand=True)
        self.accum_dtype_abbrv = abbreviation(self.accum_dtype, operand=False)

    def _check_types(self):
        if (self.a_dtype, self.b_dtype, self.accum_dtype) not in _FORMS:
            raise _refuse(f"operands {self.a_dtype} x {self.b_dtype} accumulating in {self.accum_dtype} (the forms "
                          f"here: fp16/bf16 -> float32, float32 (tf32) -> float32, int8/uint8 -> int32)")

    # -- threads -----------------------------------------------------------------------------------

    def get_thread_binding(self):
        if self.thread_var is not None:
            return self.thread_var
        from ....language.kernel import get_thread_binding

        return get_thread_binding(0)

    def extract_thread_binding(self, thread_id, is_m_first: bool | None = None):
        """(lane, warp column, warp row) of ``thread_id`` (module docstring)."""
        first = self.is_m_first if is_m_first is None else is_m_first
        lane = thread_id % WARP
        if first:
            return lane, (thread_id // WARP) % self.block_col_warps, \
                (thread_id // (WARP * self.block_col_warps)) % self.block_row_warps
        return lane, (thread_id // (WARP * self.block_row_warps)) % self.block_col_warps, \
            (thread_id // WARP) % self.block_row_warps

    @property
    def mma_num_inst_m(self) -> int:
        return self.warp_rows

    @property
    def mma_num_inst_n(self) -> int:
        return self.warp_cols

    # -- operand loads -------------------------------------------------------------------------------

    def ldmatrix_a(self, A_local_buf, A_shared_buf, ki, rk=0):
        """This warp's A fragments of k-step ``ki`` (of chunk ``rk``) into ``A_local_buf``."""
        from .... import language as T

        _registers(A_local_buf, "A_local_buf")
        buf, base = _region(A_shared_buf, "A_shared_buf")
        lane, _, warp_m = self.extract_thread_binding(self.get_thread_binding())
        per_row = 128 // self.bits
        wk = rk * self.chunk + ki * self.k_dim
        for i in range(self.warp_rows):
            wi = warp_m * self.warp_row_tiles + i * self.M_DIM
            dst = i * self.local_size_a
            if not self.a_transposed:  # M x K: lane l names row l % 16 at k (l // 16) * 16 bytes
                at = (wi + lane % 16, wk + lane // 16 * per_row)
            elif self.bits == 16:  # K x M, transposed by ldmatrix
                at = (wk + lane % 8 + lane // 16 * 8, wi + lane // 8 % 2 * 8)
            else:
                self._plain_loads(A_local_buf, dst, buf, base, lane, self.local_size_a, _a_element,
                                  lambda m, k: (wk + k, wi + m))
                continue
            T.ptx_ldmatrix(self.a_transposed, 4, self._element(buf, base, at), A_local_buf[dst])

    def ldmatrix_b(self, B_local_buf, B_shared_buf, ki, rk=0):
        """This warp's B fragments of k-step ``ki`` (of chunk ``rk``) into ``B_local_buf``."""
        from .... import language as T

        _registers(B_local_buf, "B_local_buf")
        buf, base = _region(B_shared_buf, "B_shared_buf")
        lane, warp_n, _ = self.extract_thread_binding(self.get_thread_binding())
        per_row = 128 // self.bits
        wk = rk * self.chunk + ki * self.k_dim
        pairs = 2 if self.n_dim == 16 else 1  # n8 halves per tile
        for j in range(self.warp_cols):
            wj = warp_n * self.warp_col_tiles + j * self.n_dim
            dst = j * self.local_size_b
            if self.b_transposed:  # N x K: lane l names row n of half l // 16 at k ((l // 8) % 2) * 16 bytes
                at = (wj + lane % 8 + lane // 16 % pairs * 8, wk + lane // 8 % 2 * per_row)
            elif self.bits == 16:  # K x N, transposed by ldmatrix
                at = (wk + lane % 8 + lane // 8 % 2 * 8, wj + lane // 16 % pairs * 8)
            else:
                for h in range(pairs):
                    half = self.local_size_b // pairs
                    self._plain_loads(B_local_buf, dst + h * half, buf, base, lane, half, _b_element,
                                      lambda k, n, h=h: (wk + k, wj + h * 8 + n))
                continue
            T.ptx_ldmatrix(not self.b_transposed, 2 * pairs, self._element(buf, base, at), B_local_buf[dst])

    def _element(self, buf, base, at):
        """``buf`` at ``at`` (row, column) of the tile that starts at ``base``."""
        indices = list(base)
        indices[-2], indices[-1] = indices[-2] + at[0], indices[-1] + at[1]
        return tirx.BufferLoad(buf, indices)

    def _plain_loads(self, local, dst, buf, base, lane, count, table, place):
        """Element-by-element loads of an operand ldmatrix cannot transpose: register ``r`` of this
        lane is element ``table(r)`` of the fragment, stored at ``place(row, col)`` of the tile."""
        from tvm.script.ir_builder import tirx as B

        for r in range(count):
            row, col = table(self.bits, lane // 4, lane % 4, r)
            B.buffer_store(local, self._element(buf, base, place(row, col)), [dst + r])

    # -- the product -------------------------------------------------------------------------------

    def mma(self, A_local_buf, B_local_buf, C_local_buf, k_inner=0):
        """C_local += A_local @ B_local for every tile of this warp."""
        for i in range(self.warp_rows):
            for j in range(self.warp_cols):
                self.mma_atom(A_local_buf, B_local_buf, C_local_buf, i, j, k_inner)

    def mma_atom(self, A_local_buf, B_local_buf, C_local_buf, inst_m_idx, inst_n_idx, k_inner=0):
        """C tile (inst_m_idx, inst_n_idx) += its A and B fragments: one mma.sync per n8 half."""
        from .... import language as T

        from tvm.script.ir_builder import tirx as B

        fragment = _is_fragment(C_local_buf)
        for name, buf in (("A_local_buf", A_local_buf), ("B_local_buf", B_local_buf)) + \
                ((("C_local_buf", C_local_buf),) if not fragment else ()):
            _registers(buf, name)
        del k_inner  # offsets operand fragments only, which are not provided
        a = inst_m_idx * self.local_size_a
        b = inst_n_idx * self.local_size_b
        c = (inst_m_idx * self.warp_cols + inst_n_idx) * self.local_size_out
        for h in range(self.n_dim // 8):
            if not fragment:
                T.ptx_mma(self.accum_dtype, self.mma_prefix, "row", "col", self.a_dtype_abbrv, self.b_dtype_abbrv,
                          self.accum_dtype_abbrv, A_local_buf, a, B_local_buf, b + h * self.local_size_b // 2,
                          C_local_buf, c + h * self.local_size_out // 2, False)
                continue
            # a fragment accumulator (TileLang's make_mma_store_layout): its four elements of this n8
            # half by their place in the block's C tile, through registers of the instruction's own;
            # the barrier-free lowering of such thread-indexed elements checks the layout holds them
            # on this lane (simt/transform/thread_indexed_fragments.py)
            acc = T.alloc_local((4,), self.accum_dtype)
            where = [self._c_element(inst_m_idx, inst_n_idx, h * 4 + k) for k in range(4)]
            for k, at in enumerate(where):
                B.buffer_store(acc, tirx.BufferLoad(C_local_buf, list(at)), [k])
            T.ptx_mma(self.accum_dtype, self.mma_prefix, "row", "col", self.a_dtype_abbrv, self.b_dtype_abbrv,
                      self.accum_dtype_abbrv, A_local_buf, a, B_local_buf, b + h * self.local_size_b // 2, acc, 0,
                      False)
            for k, at in enumerate(where):
                B.buffer_store(C_local_buf, tirx.BufferLoad(acc, [k]), list(at))

    def _c_element(self, inst_m_idx, inst_n_idx, e):
        """(row, column) in the block's C tile of this lane's accumulator ``e`` of its warp's tile
        (inst_m_idx, inst_n_idx)."""
        lane, warp_n, warp_m = self.extract_thread_binding(self.get_thread_binding())
        row, col = mma_store_index_map(lane, e)
        return ((warp_m * self.warp_rows + inst_m_idx) * self.M_DIM + row,
                (warp_n * self.warp_cols + inst_n_idx) * self.n_dim + col)

    # -- accumulators out ----------------------------------------------------------------------------

    def stmatrix(self, C_local_buf, C_buf, pid_m=None, pid_n=None):
        """This warp's accumulators into ``C_buf``: shared ``[M, N]`` or ``[M // 16, N // n, 16, n]``
        at the block's origin, or, with ``pid_m`` / ``pid_n``, global ``[M, N]`` at that block."""
        from tvm.script.ir_builder import tirx as B

        fragment = _is_fragment(C_local_buf)
        if not fragment:
            _registers(C_local_buf, "C_local_buf")
        rank = len(C_buf.ty.shape)
        if rank not in (2, 4):
            raise FrontendError(f"TensorCoreIntrinEmitter.stmatrix: C_buf '{C_buf.name}' must be 2-D [M, N] or 4-D "
                                f"[M // 16, N // {self.n_dim}, 16, {self.n_dim}], got {rank}-D")
        is_global = pid_m is not None and pid_n is not None
        lane, warp_n, warp_m = self.extract_thread_binding(self.get_thread_binding())
        tiles_m, tiles_n = self.block_row_warps * self.warp_rows, self.block_col_warps * self.warp_cols
        # one loop nest, not unrolled statements: the barrier pass checks which thread owns which
        # element of C_buf once for the nest (simt/transform/private_shared.py)
        with B.unroll(0, self.warp_rows) as i, B.unroll(0, self.warp_cols) as j, \
                B.unroll(0, self.local_size_out) as e:
            row, col = mma_store_index_map(lane, e)
            ti, tj = warp_m * self.warp_rows + i, warp_n * self.warp_cols + j
            in_block = [ti * self.M_DIM + row, tj * self.n_dim + col]  # the element's place in the block's C tile
            value = tirx.BufferLoad(C_local_buf, in_block if fragment
                                    else [(i * self.warp_cols + j) * self.local_size_out + e])
            if is_global:
                where = [(pid_m * tiles_m + ti) * self.M_DIM + row, (pid_n * tiles_n + tj) * self.n_dim + col]
            else:
                where = in_block if rank == 2 else [ti, tj, row, col]
            B.buffer_store(C_buf, value, where)

    # -- not provided ------------------------------------------------------------------------------

    def make_mma_load_layout(self, local_buf, matrix="A"):
        raise _refuse("make_mma_load_layout (fragments laid out for hand-written mma)")

    def make_mma_store_layout(self, local_buf):
        """The layout of a ``T.alloc_fragment((block_M, block_N))`` accumulator under which ``mma`` and
        ``stmatrix`` address it: element (i, j) on the lane and register where mma.sync leaves it in
        the warp that owns its tile (module docstring), so a T.copy or T.Parallel epilogue reads it
        in place."""
        from .... import language as T

        if self.reduce_k != 1:
            raise _refuse(f"make_mma_store_layout with reduce_k={self.reduce_k}")
        shape = tuple(int(x) for x in getattr(local_buf, "shape", ()))
        want = (self.block_row_warps * self.warp_row_tiles, self.block_col_warps * self.warp_col_tiles)
        if shape != want:
            raise FrontendError(f"TensorCoreIntrinEmitter.make_mma_store_layout: the accumulator must be the block's C "
                                f"tile, shape {list(want)} (block_row_warps x warp_row_tiles, block_col_warps x "
                                f"warp_col_tiles), got {list(shape)}")

        def forward(i, j):
            warp_m, warp_n = i // self.warp_row_tiles, j // self.warp_col_tiles
            r, c = i % self.M_DIM, j % self.n_dim
            warp = warp_n + warp_m * self.block_col_warps if self.is_m_first else warp_m + warp_n * self.block_row_warps
            tile = (i % self.warp_row_tiles) // self.M_DIM * self.warp_cols + (j % self.warp_col_tiles) // self.n_dim
            return (warp * WARP + r % 8 * 4 + c % 8 // 2,
                    tile * self.local_size_out + r // 8 * 2 + c % 2 + 4 * (c // 8))

        return T.Fragment(list(shape), forward_fn=forward)

    def get_store_index_map(self, inverse: bool = False):
        raise _refuse("get_store_index_map (an IndexMap; use mma_store_index_map(lane, e))")


class TensorCoreIntrinEmitterWithLadderTransform(TensorCoreIntrinEmitter):
    def __init__(self, *args, **kwargs):
        raise _refuse("TensorCoreIntrinEmitterWithLadderTransform (BitBLAS's ladder layouts)")


__all__ = ["TensorCoreIntrinEmitter", "TensorCoreIntrinEmitterWithLadderTransform", "get_mma_micro_size",
           "mma_store_index_map"]

__getattr__ = unavailable(__name__)
