"""Kernels written with TileLang's hand-written MMA machinery (tilelang_core.cuda.intrinsics), as
TileLang's ``example_gemm_intrinsics`` writes them: T.Parallel loads into swizzled shared tiles in
a T.Pipelined loop, the TensorCoreIntrinEmitter's ldmatrix / mma / stmatrix macros, a T.Parallel
store of the C tile. Shared by the interpreter, build and GPU tests."""

import tilelang_core.language as T
from tilelang_core.cuda.intrinsics import TensorCoreIntrinEmitter, get_swizzle_layout, make_mma_swizzle_layout


def swizzled(buf):
    """The example's own swizzle: get_swizzle_layout where a row is 64 bytes, else the identity."""
    shape = buf.shape
    if int(shape[-1]) * {"float16": 16, "bfloat16": 16, "int8": 8, "float32": 32}[str(buf.dtype)] != 512:
        return T.Layout(shape, lambda *args: args)
    return T.Layout(shape, lambda i, j: list(get_swizzle_layout(i, j, shape[-1], buf.dtype)))


def emitter_gemm(M, N, K, in_dtype="float16", accum_dtype="float32", a_transposed=False, b_transposed=True,
                 warps=(2, 2), warp_tiles=(32, 32), chunk=32, stages=2, layout="example", c_rank=4, c_fragment=None):
    """C[M, N] = A @ B with A stored M x K (K x M with ``a_transposed``) and B K x N (N x K with
    ``b_transposed``). ``layout``: "example" (the example's swizzle), "mma" (make_mma_swizzle_layout)
    or None (the compiler's own); ``c_rank``: the shared C tile as [tiles, tiles, 16, n] or [M, N];
    ``c_fragment``: the accumulator a T.alloc_fragment laid out by make_mma_store_layout, stored by
    "copy" (T.copy to C) or "stmatrix" (into the shared C tile), instead of T.alloc_local registers."""
    block_row_warps, block_col_warps = warps
    emitter = TensorCoreIntrinEmitter(a_dtype=in_dtype, b_dtype=in_dtype, accum_dtype=accum_dtype,
                                      a_transposed=a_transposed, b_transposed=b_transposed,
                                      block_row_warps=block_row_warps, block_col_warps=block_col_warps,
                                      warp_row_tiles=warp_tiles[0], warp_col_tiles=warp_tiles[1], chunk=chunk)
    block_M, block_N, block_K = block_row_warps * warp_tiles[0], block_col_warps * warp_tiles[1], chunk
    mx, ny = emitter.micro_size_x, emitter.micro_size_y
    c_shape = (block_M // mx, block_N // ny, mx, ny) if c_rank == 4 else (block_M, block_N)
    a_shape, a_tile = ((K, M), (block_K, block_M)) if a_transposed else ((M, K), (block_M, block_K))
    b_shape, b_tile = ((N, K), (block_N, block_K)) if b_transposed else ((K, N), (block_K, block_N))
    threads = 32 * block_row_warps * block_col_warps

    @T.prim_func
    def gemm(A: T.Tensor(a_shape, in_dtype), B: T.Tensor(b_shape, in_dtype), C: T.Tensor((M, N), accum_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared(a_tile, in_dtype, scope="shared.dyn")
            B_shared = T.alloc_shared(b_tile, in_dtype, scope="shared.dyn")
            C_shared = T.alloc_shared(c_shape, accum_dtype, scope="shared.dyn")
            A_local = T.alloc_local((emitter.warp_rows * emitter.local_size_a), in_dtype)
            B_local = T.alloc_local((emitter.warp_cols * emitter.local_size_b), in_dtype)
            if c_fragment is not None:
                C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
                T.annotate_layout({C_local: emitter.make_mma_store_layout(C_local)})
            else:
                C_local = T.alloc_local((emitter.warp_rows * emitter.warp_cols * emitter.local_size_out), accum_dtype)
            if layout == "example":
                T.annotate_layout({A_shared: swizzled(A_shared), B_shared: swizzled(B_shared)})
            elif layout == "mma":
                T.annotate_layout({A_shared: make_mma_swizzle_layout(A_shared),
                                   B_shared: make_mma_swizzle_layout(B_shared)})
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=stages):
                if a_transposed:
                    for k, i in T.Parallel(block_K, block_M):
                        A_shared[k, i] = A[ko * block_K + k, by * block_M + i]
                else:
                    for i, k in T.Parallel(block_M, block_K):
                        A_shared[i, k] = A[by * block_M + i, ko * block_K + k]
                if b_transposed:
                    for j, k in T.Parallel(block_N, block_K):
                        B_shared[j, k] = B[bx * block_N + j, ko * block_K + k]
                else:
                    for k, j in T.Parallel(block_K, block_N):
                        B_shared[k, j] = B[ko * block_K + k, bx * block_N + j]
                for ki in T.serial(block_K // emitter.micro_size_k):
                    emitter.ldmatrix_a(A_local, A_shared, ki)
                    emitter.ldmatrix_b(B_local, B_shared, ki)
                    emitter.mma(A_local, B_local, C_local)
            if c_fragment == "copy":
                T.copy(C_local, C[by * block_M, bx * block_N])
                return
            emitter.stmatrix(C_local, C_shared)
            for i, j in T.Parallel(block_M, block_N):
                if c_rank == 4:
                    C[by * block_M + i, bx * block_N + j] = C_shared[i // mx, j // ny, i % mx, j % ny]
                else:
                    C[by * block_M + i, bx * block_N + j] = C_shared[i, j]

    return gemm


def one_mma(dtype="float16", trans_a=False, num_b=2):
    """One warp, one 16 x 8 x k tile, straight T.ptx_ldmatrix / T.ptx_mma calls: A (16 x k) stored
    M x K (K x M with ``trans_a``, ldmatrix .trans), Bt (8 x k) stored N x K, C (16 x 8) out.
    ``num_b`` = 1 loads B's two halves of k with two ldmatrix .x1."""
    bits = {"float16": 16, "bfloat16": 16, "int8": 8, "float32": 32}[dtype]
    k, per_row = 256 // bits, 128 // bits
    acc = "int32" if bits == 8 else "float32"
    abbr = {"float16": "fp16", "bfloat16": "bf16", "int8": "int8", "float32": "tf32"}[dtype]
    shape = {16: "m16n8k16", 8: "m16n8k32", 32: "m16n8k8"}[bits]
    na, nb = 16 * k // 32, 8 * k // 32
    a_shape = (k, 16) if trans_a else (16, k)

    @T.prim_func
    def mma(A: T.Tensor(a_shape, dtype), Bt: T.Tensor((8, k), dtype), C: T.Tensor((16, 8), acc)):
        with T.Kernel(1, threads=32):
            As = T.alloc_shared(a_shape, dtype)
            Bs = T.alloc_shared((8, k), dtype)
            a = T.alloc_local((na,), dtype)
            b = T.alloc_local((nb,), dtype)
            c = T.alloc_local((4,), acc)
            T.copy(A, As)
            T.copy(Bt, Bs)
            tx = T.get_thread_binding()
            for e in T.serial(4):
                c[e] = 0
            if trans_a:
                T.ptx_ldmatrix(True, 4, T.access_ptr(As[tx % 8 + tx // 16 * 8, tx // 8 % 2 * 8], "r"),
                               T.access_ptr(a[0], "w"))
            else:
                T.ptx_ldmatrix(False, 4, T.access_ptr(As[tx % 16, tx // 16 * per_row], "r"), T.access_ptr(a[0], "w"))
            if num_b == 2:
                T.ptx_ldmatrix(False, 2, T.access_ptr(Bs[tx % 8, tx // 8 % 2 * per_row], "r"), T.access_ptr(b[0], "w"))
            else:
                T.ptx_ldmatrix(False, 1, T.access_ptr(Bs[tx % 8, 0], "r"), T.access_ptr(b[0], "w"))
                T.ptx_ldmatrix(False, 1, T.access_ptr(Bs[tx % 8, per_row], "r"), T.access_ptr(b[nb // 2], "w"))
            T.ptx_mma(acc, shape, "row", "col", abbr, abbr, "int32" if bits == 8 else "fp32",
                      a.data, 0, b.data, 0, c.data, 0, False)
            for e in T.serial(4):
                C[tx // 4 + 8 * (e // 2), tx % 4 * 2 + e % 2] = c[e]

    return mma
